/**
 * The @nestjs/swagger decorators the module's routes and DTOs carry, from the optional peer when the host
 * has it installed (its OpenAPI document then describes the webhook API), otherwise decorators that do
 * nothing: an app without Swagger never loads it. Only this file names the package at run time.
 */
type Swagger = typeof import('@nestjs/swagger');
type Decorators = Pick<
  Swagger,
  | 'ApiBody'
  | 'ApiExcludeController'
  | 'ApiExtraModels'
  | 'ApiHeader'
  | 'ApiOperation'
  | 'ApiParam'
  | 'ApiProduces'
  | 'ApiProperty'
  | 'ApiPropertyOptional'
  | 'ApiQuery'
  | 'ApiResponse'
  | 'ApiSecurity'
  | 'ApiTags'
>;

function loadSwagger(): Swagger | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer, loaded only if installed
    return require('@nestjs/swagger') as Swagger;
  } catch {
    return undefined;
  }
}

const swagger = loadSwagger();
/** A decorator factory whose decorators change nothing. */
const none = (() => () => undefined) as unknown as Decorators[keyof Decorators];
const pick = <K extends keyof Decorators>(name: K): Decorators[K] => (swagger?.[name] ?? none) as Decorators[K];

export const ApiBody = pick('ApiBody');
export const ApiExcludeController = pick('ApiExcludeController');
export const ApiExtraModels = pick('ApiExtraModels');
export const ApiHeader = pick('ApiHeader');
export const ApiOperation = pick('ApiOperation');
export const ApiParam = pick('ApiParam');
export const ApiProduces = pick('ApiProduces');
export const ApiProperty = pick('ApiProperty');
export const ApiPropertyOptional = pick('ApiPropertyOptional');
export const ApiQuery = pick('ApiQuery');
export const ApiResponse = pick('ApiResponse');
export const ApiSecurity = pick('ApiSecurity');
export const ApiTags = pick('ApiTags');
