/** Every message the module writes, in one place: answers to callers, admin errors and startup errors. */

// Webhook API answers
export const UNKNOWN_TRIGGER = (id: string) => `Trigger "${id}" does not exist`;
export const UNKNOWN_INVOCATION = (id: string) => `Invocation "${id}" does not exist for this trigger`;
export const MISSING_KEY = 'The X-Key header is required';
export const INVALID_KEY = 'The X-Key header does not match this trigger';
export const RATE_LIMITED = (scope: string) => `Too many requests for this ${scope}; retry later`;
export const TOO_MANY_FAILED_KEYS = 'Too many requests with a wrong X-Key from this address; retry later';
export const TOO_MANY_UNVERIFIED_BODIES = (limit: number) =>
  `Too many signed requests from this address are being read at once (at most ${limit}, the failed-key limit); retry once one is answered`;
// Callers of the webhook API never see internal ids (the account behind a trigger), nor how the server is set up:
// the way to open an account is for its owner, in the startup warning (ACCOUNT_NEVER_OPENED).
export const NOT_ENOUGH_CREDITS = (cost: number) => `The bot's account has fewer than ${cost} credit(s) left; nothing was run`;
const OPENS_IT = 'opens it with credits (the "accounts" option or WebhookTriggersAdmin.setCredits)';
export const ACCOUNT_NOT_FUNDED = (cost: number) =>
  `The bot's account has no credits yet: it has not been funded (a run costs ${cost} credit(s)); nothing was run`;
export const BODY_NOT_JSON_TYPE = (type: string | undefined) => `Content-Type must be application/json${type ? `, got "${type}"` : ''}`;
export const BODY_MALFORMED = 'The request body is not valid JSON';
export const BODY_NOT_OBJECT = 'The request body must be a JSON object';
export const BODY_TOO_LARGE = (limit: number) => `The request body exceeds ${limit} bytes`;
export const BODY_TOO_DEEP = (depth: number) => `The request body nests arrays and objects deeper than ${depth} levels`;
export const BODY_TIMEOUT = (ms: number) => `The request body did not arrive within ${ms} ms`;
export const BAD_IDEMPOTENCY_KEY = 'Idempotency-Key must be 1–255 visible ASCII characters';
export const IDEMPOTENCY_KEY_TAKEN = (triggerId: string) => `Idempotency key already used on trigger ${triggerId}`;
export const CLIENT_GONE = 'The client closed the connection before its request was read';
export const METHOD_NOT_ALLOWED = (method: string, allowed: string) => `${method} is not allowed on this path; use ${allowed}`;
export const IDEMPOTENCY_KEY_REUSED =
  'This Idempotency-Key was already used on this trigger with a different request body; use a new key for a new request';
export const SYNC_TIMEOUT = (ms: number, status: string) => `The run did not finish within ${ms} ms (status: ${status}); call sync again`;
export const SYNC_SHUTDOWN = (status: string) => `The application is shutting down (run status: ${status}); call sync again`;
export const BAD_TIMEOUT = 'timeout must be a whole number of seconds from 1 to 300';
export const QUERY_NOT_SINGLE = (name: string) =>
  `The query parameter ${name} must be given once, as text (not repeated, a list or an object)`;
export const BOT_NOT_REGISTERED = (botId: string) => `Bot "${botId}" is not registered in this application`;
export const ALREADY_FINISHED = (id: string, status: string) => `Invocation "${id}" already finished (${status}); it cannot be cancelled`;
export const SHUTTING_DOWN = 'The application is shutting down; retry shortly (another instance may take the request)';
export const BACKLOG_FULL = (max: number) =>
  `Too many runs are waiting to start (maxQueuedRuns: ${max}); nothing was stored or charged, retry later`;
export const ACCOUNT_BACKLOG_FULL = (share: number) =>
  `Too many runs of this account are waiting to start (${share}, half of maxQueuedRuns); nothing was stored or charged, retry later`;
export const INTERNAL_ERROR = 'Internal server error';
export const DATABASE_UNAVAILABLE = 'The database connection was lost; retry shortly';

// How a run ends when it does not end by its own outcome
export const OUTPUTS_TOO_LARGE = (bytes: number, max: number) =>
  `The bot's outputs are ${bytes} bytes of JSON, over the limit of ${max} (maxOutputBytes)`;
export const INVALID_OUTPUTS = 'The bot returned invalid outputs: expected an array of { title: string, message: string }';
export const INVALID_EMITTED_OUTPUT = 'The bot emitted an invalid output: expected { title: string, message: string }';
export const RUN_TIMED_OUT = (ms: number) => `The bot did not finish within ${ms} ms`;
export const RUN_CANCELLED = 'The run was cancelled';
export const RUN_INTERRUPTED = 'The run was interrupted: the application stopped before it finished';
export const RUN_INTERRUPTED_TOO_OFTEN = (attempts: number) =>
  `The run was interrupted too often: its process stopped before it finished on each of ${attempts} attempts`;
export const RUN_UNSUCCESSFUL = 'The run did not succeed';

// Admin service
export const UNKNOWN_BOT = (id: string) => `Bot "${id}" is not registered`;
export const ADMIN_BEFORE_INIT = (method: string) =>
  `WebhookTriggersAdmin.${method}() was called before the module initialised, when no bot is registered yet: call it after app.init() or app.listen()`;
export const TRIGGER_TYPE_UNSUPPORTED = (type: string) => `Trigger type "${type}" is not supported; use "webhook"`;
export const BAD_TRIGGER_NAME = 'Trigger name must be 1–200 characters without control characters';
export const BAD_ACCOUNT_ID = 'Account ids are 1–200 characters without control characters';
export const BAD_CREDITS = 'credits must be a whole number ≥ 0';
export const BAD_ADMIN_FIELD = (field: string, expected: string) => `${field} must be ${expected}`;
export const REPLAY_TRIGGER_DELETED = (triggerId: string) => `Trigger "${triggerId}" was deleted; its runs cannot be replayed`;
export const ADMIN_READ_ONLY = 'The admin is read-only: changes are refused';
export const ADMIN_CROSS_SITE = 'Cross-site request refused: send changes from the admin screens (header X-Webhook-Admin: 1, same origin)';
export const TOO_MANY_SYNC_WAITERS = (max: number) => `Too many sync requests are waiting on this server (${max}); retry later`;
export const TOO_MANY_SYNC_WAITERS_OF = (whose: 'trigger' | 'account', max: number, option: string) =>
  `This ${whose} already has ${max} sync requests waiting on this server (${option}); retry when one is answered`;
export const TOO_MANY_EVENT_STREAMS = (max: number) => `Too many run event streams are open on this server (${max}); retry later`;
export const TOO_MANY_EVENT_STREAMS_OF = (whose: 'trigger' | 'account', max: number, option: string) =>
  `This ${whose} already has ${max} run event streams open on this server (${option}); close one or retry later`;
export const BAD_AFTER = 'Last-Event-ID and "after" must be a whole number (the id of the last event received)';
export const ADMIN_TOO_MANY_STREAMS = (max: number) => `Too many live history streams are open on this server (${max}); retry later`;
export const ADMIN_INVALID_OPTION = (field: string, expected: string) =>
  `WebhookTriggerAdminModule: invalid option "${field}": ${expected}`;
export const ADMIN_GUARDS_REQUIRED =
  'WebhookTriggerAdminModule: the option "guards" is required: the guards that decide who is an admin (e.g. guards: [AdminGuard]). Pass guards: [] to mount the admin without any guard.';
export const ADMIN_NO_GUARDS = (path: string) =>
  `WebhookTriggerAdminModule is mounted at /${path} with guards: []: anyone who can reach this server can manage triggers, credits and runs`;
export const ADMIN_WITHOUT_MODULE =
  'WebhookTriggerAdminModule needs WebhookTriggerModule.forRoot() (or forRootAsync()) in the same application';
export const UNKNOWN_INVOCATION_ID = (id: string) => `Invocation "${id}" does not exist`;
export const UNKNOWN_ACCOUNT = (id: string) => `No account ${id.slice(0, 200)}`;
export const UNKNOWN_DELIVERY = (id: string) => `No delivery ${id.slice(0, 200)}`;
/** 404 for a trigger without a callback (or an unknown trigger). */
export const UNKNOWN_SIGNING_SECRET = (id: string) => `No signing secret ${id.slice(0, 200)} on this trigger (or it was already revoked)`;
export const NO_CALLBACK = (triggerId: string) => `No callback on trigger ${triggerId.slice(0, 200)}`;
// Trigger keys (several per trigger: docs/security.md "Keys and rotation")
export const UNKNOWN_TRIGGER_KEY = (keyId: string) => `Key "${String(keyId).slice(0, 200)}" does not exist on this trigger (or is revoked)`;
export const BAD_KEY_LABEL = 'Key label must be 1–200 characters without control characters';
export const BAD_KEY_EXPIRY = 'expiresAt must be an ISO 8601 date and time in the future, or null';
export const TOO_MANY_TRIGGER_KEYS = (max: number) =>
  `This trigger already has ${max} usable keys, the most it may have; revoke one first (nothing was changed)`;
export const ADMIN_BODY_NOT_OBJECT = 'Send a JSON object with Content-Type: application/json';

// Startup
export const INVALID_OPTION = (field: string, problem: string) => `WebhookTriggerModule: invalid option "${field}": ${problem}`;
export const UNKNOWN_OPTION = (field: string, suggestion: string | undefined) =>
  `WebhookTriggerModule: unknown option "${field}"${suggestion ? `; did you mean "${suggestion}"?` : ''}`;
// What is wrong with an option or a @WebhookBot() field: the `problem` of INVALID_OPTION (`got` is the value as JSON)
export const EXPECTED_WHOLE_NUMBER = (min: number, max: number, got: string) => `expected a whole number from ${min} to ${max}, got ${got}`;
export const EXPECTED_NON_EMPTY_STRING = (got: string) => `expected a non-empty string, got ${got}`;
export const EXPECTED_BOOLEAN = (got: string) => `expected true or false, got ${got}`;
export const EXPECTED_SHAPE = (shape: string) => `expected ${shape}`;
export const EXPECTED_ONE_OF = (values: readonly string[], got: string) => `expected one of ${values.join(', ')}, got ${got}`;
export const DATABASE_TYPE_INVALID = (got: string) => `expected "better-sqlite3" or "postgres", got ${got}`;
export const REDIS_URL_INVALID = (got: string) => `expected redis:// or rediss://, got ${got}`;
export const ACCOUNTS_INVALID = 'expected { [accountId]: { credits } }';
export const ACCOUNT_ID_INVALID = (got: string) => `account ids are 1–200 characters without control characters, got ${got}`;
export const NOT_ABSOLUTE_URL = (got: string) => `not an absolute URL: ${got}`;
export const ALLOWED_HOSTS_NOT_LIST = (got: string) => `expected an array of host names or IP addresses, got ${got}`;
export const ALLOWED_HOST_INVALID = (got: string) => `expected a host name or IP address (no scheme, port or path), got ${got}`;
export const RETRY_SCHEDULE_INVALID = (got: string) => `expected 1 to 100 delays in ms, got ${got}`;
export const KEY_SECRET_TOO_SHORT = 'expected a string of at least 16 characters, or leave it unset';
export const EXTRA_NOT_CLASS = 'expected a class (it is bound with useClass)';
export const EXTRA_NEEDS_REDIS = (className: string, extra: string) =>
  `${className} (the "${extra}" extra) needs the "redis" option, e.g. redis: { url: 'redis://127.0.0.1:6379' }`;
export const DATA_SOURCE_AND_DATABASE = 'set either "dataSourceName" (the host\'s DataSource) or "database", not both';
export const MIGRATIONS_RUN_WITH_DATA_SOURCE =
  'applies to the module\'s own database only; with "dataSourceName" your DataSource runs WEBHOOK_TRIGGER_MIGRATIONS (migrationsRun: true there)';
export const STORAGE_NOT_CLASS = 'expected a WebhookStorage class or instance';
export const TRANSPORT_NOT_CLASS = 'expected a CallbackTransport class or instance';
export const CLOCK_WITHOUT_NOW = 'expected a Clock: an object with now() (ms since the epoch) and setTimer(fn, ms)';
export const STORAGE_REPLACES_SQL = 'applies to the module\'s SQL storage only, and the "storage" extra replaces it';
export const API_ROLE_RUNS_NOTHING =
  "'api' means this process never runs bots, but the in-process runner runs them here; choose runner: BullMqBotRunner (workers elsewhere), or role 'all'";
export const BOT_ID_INVALID = 'use 1–200 letters, digits, ".", "_" or "-"';
export const BOT_CREDITS_INVALID = 'expected a whole number ≥ 0';
export const BOT_TIMEOUT_INVALID = (max: number) => `expected a whole number of milliseconds from 1 to ${max}`;
export const DUPLICATE_BOT_ID = (id: string, a: string, b: string) =>
  `@WebhookBot id "${id}" is used by both ${a} and ${b}; bot ids must be unique`;
export const BOT_NOT_EXTENDING_BASE = (name: string) =>
  `${name} is decorated with @WebhookBot() but does not extend WebhookBotHost; declare it as "class ${name} extends WebhookBotHost" and implement main()`;
export const HOST_DATA_SOURCE_ENTITIES = (name: string) =>
  `WebhookTriggerModule: DataSource "${name}" does not include WEBHOOK_TRIGGER_ENTITIES; add them to its "entities"`;
export const HOST_DATA_SOURCE_MISSING = (name: string) =>
  `WebhookTriggerModule: "dataSourceName" is "${name}" but no TypeORM DataSource of that name exists here: import TypeOrmModule.forRoot(${name === 'default' ? '' : `{ name: '${name}', … }`}) in the same module as WebhookTriggerModule (or in a global module)`;
export const HOST_DATA_SOURCE_MIGRATIONS = (name: string, problem: string) =>
  `WebhookTriggerModule: DataSource "${name}" lacks the module's tables (${problem}); add WEBHOOK_TRIGGER_MIGRATIONS to its "migrations" and set "migrationsRun: true" (or run them with your migration tooling)`;
export const HOST_DATA_SOURCE_SYNCHRONIZE = (name: string) =>
  `WebhookTriggerModule: DataSource "${name}" has "synchronize: true", which rewrites the module's tables from the entities and drops what only the migrations create (the CHECK that credits never go below 0); set synchronize: false and run WEBHOOK_TRIGGER_MIGRATIONS`;
export const MODULE_IMPORTED_TWICE = (count: number) =>
  `WebhookTriggerModule is imported ${count} times in this application (forRoot() or forRootAsync()); each would map the webhook routes and open a database of its own. ` +
  `Import forRoot() once, in AppModule; to inject WebhookTriggersAdmin (or another of its exports) elsewhere, pass isGlobal: true to it, or import the module that imports it`;
export const EVENTS_WITHOUT_EMITTER = (listener: string) =>
  `WebhookTriggerModule: ${listener} listens to the module's events with @OnEvent(), but the app has no EventEmitter2, so it is never called: import EventEmitterModule.forRoot() (from @nestjs/event-emitter) in AppModule`;
export const SHUTDOWN_HOOKS_OFF =
  'WebhookTriggerModule: shutdown hooks are not enabled, so on SIGTERM waiting sync requests get an empty reply and running bots are cut off, left "running" until the next start recovers them; call app.enableShutdownHooks() before app.listen()';
export const HOST_DATA_SOURCE_SQLITE = (name: string, type: string) =>
  `WebhookTriggerModule: DataSource "${name}" is ${type}; the module's SQLite writes are grouped into shared transactions on one connection, ` +
  `which would interleave with your own writes on it. Use the module's own SQLite file (the "database" option, without "dataSourceName") ` +
  `or a PostgreSQL DataSource`;
export const SQLITE_DRIVER_MAY_ABORT = (driverVersion: string, nodeVersion: string) =>
  `better-sqlite3 ${driverVersion} on Node ${nodeVersion} can abort the process when the garbage collector frees one of its ` +
  `statements (nodejs/node#65446, Node 24.19 and later). Install better-sqlite3 13 (Node-API), or run on Node 22: see ` +
  `docs/configuration.md, "SQLite on Node 24 and 26"`;
export const MISSING_PACKAGE = (part: string, install: string) =>
  `WebhookTriggerModule: ${part} needs a package that is not installed: npm install ${install}`;
export const CANNOT_CONNECT = (part: string, url: string, reason: string) =>
  `WebhookTriggerModule: ${part} could not connect to ${url} (the "redis.url" option): ${reason}`;

// Signed callbacks (Standard Webhooks): receivers' verification, and the sender's refusals and failures
export const CALLBACK_SECRET_INVALID =
  'A webhook secret must be "whsec_" followed by the base64 of its bytes (as generated), or that base64 alone';
export const CALLBACK_SECRET_MISSING =
  'No webhook secret was given (undefined or empty): set the variable it comes from to the whsec_… secret the admin showed for the callback (one loaded after your controllers are imported, e.g. by ConfigModule from a .env file, needs the function form: withSecret(() => process.env.X!))';
export const WITH_SECRET_INVALID = (problem: string) => `WebhookSignatureGuard.withSecret(): ${problem}`;
export const WEBHOOK_HEADERS_MISSING = (names: string[]) => `Missing webhook header(s): ${names.join(', ')}`;
export const WEBHOOK_HEADER_REPEATED = (name: string) => `The ${name} header appears more than once`;
export const WEBHOOK_ID_INVALID = 'The webhook-id header must be 1–255 visible ASCII characters without "."';
export const WEBHOOK_TIMESTAMP_INVALID = 'The webhook-timestamp header must be whole seconds since the Unix epoch';
export const WEBHOOK_TIMESTAMP_TOO_OLD = (ageSec: number, toleranceSec: number) =>
  `The webhook-timestamp is ${ageSec} s old, more than the ${toleranceSec} s tolerated (a replay, or a clock out of sync)`;
export const WEBHOOK_TIMESTAMP_TOO_NEW = (aheadSec: number, toleranceSec: number) =>
  `The webhook-timestamp is ${aheadSec} s in the future, more than the ${toleranceSec} s tolerated (a clock out of sync)`;
export const WEBHOOK_NO_V1_SIGNATURE = 'The webhook-signature header holds no "v1," signature';
export const WEBHOOK_SIGNATURE_MISMATCH =
  'No signature in webhook-signature matches the body with this secret (a wrong secret, or a body changed on the way: verify the raw bytes as received, not re-serialized JSON)';
export const WEBHOOK_BODY_NOT_JSON = 'The webhook signature is valid but the body is not JSON';
export const WEBHOOK_RAW_BODY_MISSING =
  'WebhookSignatureGuard needs the raw request body to verify the signature, and req.rawBody is not set: create the app with NestFactory.create(AppModule, { rawBody: true }) (Express or Fastify), or give this route a raw body parser';
// Signed trigger requests (a trigger's requestSigning): the 401 says which check failed, never which part of a secret
export const SIGNED_REQUEST_HEADERS_MISSING = (names: string[]) =>
  `This trigger accepts signed requests only (Standard Webhooks): missing ${names.join(', ')}`;
export const SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW = (offsetSec: number, toleranceSec: number) =>
  `The webhook-timestamp is ${offsetSec} s away from this server's time, outside the ±${toleranceSec} s window (a replay, or a clock out of sync)`;
export const SIGNED_REQUEST_SIGNATURE_MISMATCH =
  "The webhook-signature does not match this request with any of the trigger's signing secrets (sign the exact bytes sent, with a current secret)";
export const SIGNED_REQUEST_REPLAYED = (windowSec: number) =>
  `This webhook-id was already used on this trigger within the last ${windowSec} s (a replay): send each message with a new webhook-id`;
export const REQUEST_SIGNING_INVALID = (modes: readonly string[]) => `requestSigning must be one of ${modes.join(', ')}`;
const CALLBACK_URL_INVALID = (problem: string) => `Invalid callback URL: ${problem}`;
export const CALLBACK_URL_REQUIRED = CALLBACK_URL_INVALID('a URL is required');
export const CALLBACK_URL_TOO_LONG = (max: number) => CALLBACK_URL_INVALID(`longer than ${max} characters`);
export const CALLBACK_URL_NOT_ABSOLUTE = CALLBACK_URL_INVALID('not an absolute URL');
export const CALLBACK_URL_SCHEME = (scheme: string) => CALLBACK_URL_INVALID(`the scheme must be http or https, not ${scheme}`);
export const CALLBACK_URL_CREDENTIALS = CALLBACK_URL_INVALID('credentials in the URL are not allowed');
export const CALLBACK_URL_NO_HOST = CALLBACK_URL_INVALID('the host is missing');
export const CALLBACK_URL_LOOPBACK_NAME = (host: string) =>
  CALLBACK_URL_INVALID(`"${host}" is a loopback name; add it to allowedHosts to allow it`);
export const CALLBACK_URL_ADDRESS_REFUSED = (host: string, kind: string) =>
  CALLBACK_URL_INVALID(`${host} is a ${kind} address; add it to allowedHosts to allow it`);
export const CALLBACK_ADDRESS_REFUSED = (host: string, address: string, kind: string) =>
  `The callback host "${host}" ${host === address ? 'is' : `resolves to ${address}, which is`} a ${kind} address; only public addresses are called unless the host is in allowedHosts`;
export const CALLBACK_TIMEOUT = (ms: number) => `The callback receiver did not answer within ${ms} ms`;
export const CALLBACK_REDIRECT = (status: number, location: string | undefined) =>
  `The callback receiver answered ${status} (a redirect${location ? ` to ${location.slice(0, 200)}` : ''}); redirects are not followed: update the callback URL`;
export const CALLBACK_STATUS = (status: number) => `The callback receiver answered ${status}`;
export const CALLBACK_GONE = 'The callback receiver answered 410 Gone: it wants no more callbacks';
export const CALLBACK_NETWORK = (reason: string) => `The callback could not be delivered: ${reason}`;
export const CALLBACK_NO_ADDRESS = (host: string) => `${host} resolved to no address`;
export const CALLBACK_NO_ADDRESS_OF_FAMILY = (host: string, family: number) => `${host} has no IPv${family} address`;
export const CALLBACK_UNEXPECTED_LOOKUP = (host: string) => CALLBACK_NETWORK(`unexpected lookup of ${host}`);
// Misuse of the callback helpers a receiver calls (RangeError: a programming error, not a request's)
export const CALLBACK_SECRET_SIZE = (min: number, max: number, bytes: number) =>
  `A callback secret has ${min} to ${max} bytes, not ${bytes}`;
export const SIGNATURE_TOLERANCE_INVALID = (toleranceSec: number) =>
  `WebhookSignatureGuard: toleranceSec must be a number of seconds >= 0, not ${toleranceSec}`;
export const RETRY_ATTEMPTS_INVALID = (attemptsMade: number) => `attemptsMade must be an integer >= 1, not ${attemptsMade}`;
export const WEBHOOK_BODY_UNREADABLE = (type: string | undefined) =>
  `The webhook body (Content-Type ${type ? `"${type.slice(0, 100)}"` : 'missing'}) was not read raw, so its signature cannot be checked; webhooks are sent as application/json`;
export const BOT_NOT_PROVIDED = (className: string, botId: string) =>
  `WebhookTriggerModule: ${className} is decorated with @WebhookBot({ id: '${botId}' }) but no module of this app provides it, so it cannot run; add it to a module's providers`;
export const NO_BOTS =
  'WebhookTriggerModule: this app has no bots, so no trigger can be created; register a class decorated with @WebhookBot() that extends WebhookBotHost as a provider';
/** `screens`: the path of the first bot's Settings in the mounted admin screens, when they are mounted. */
export const FIRST_TRIGGER = (botIds: string[], screens?: string) =>
  `WebhookTriggerModule: no triggers yet. Create one in the admin screens ` +
  (screens
    ? `(open ${screens}, then Bot Triggers → Add Trigger) `
    : `(WebhookTriggerAdminModule: a bot's Settings → Bot Triggers → Add Trigger) `) +
  `or in code: await app.get(WebhookTriggersAdmin).createTrigger('${botIds[0]}', { name: 'my trigger' }) answers its URL and key (bots: ${botIds.join(', ')})`;
export const ACCOUNT_NEVER_OPENED = (accountId: string, botIds: string[]) =>
  `WebhookTriggerModule: account "${accountId}" (of ${botIds.join(', ')}) has not been funded yet, so its triggers answer 402 and nothing runs. ` +
  `Its owner ${OPENS_IT}, e.g. accounts: { ${JSON.stringify(accountId)}: { credits: 100 } }`;

// Log lines of the webhook API (for the host's operators)
export const KEY_USES_NOT_STORED = (count: number, reason: string) => `Could not store the last use of ${count} trigger key(s): ${reason}`;
export const LOG_EVENT_STREAM_READ_FAILED = (invocationId: string, error: string) =>
  `Run event stream of ${invocationId} ended: could not read the run (${error})`;
export const LOG_DATABASE_LOST = (reason: string) => `The database connection was lost during a webhook request: ${reason}`;
export const LOG_UNEXPECTED_ERROR = 'Unexpected error in the webhook API';
export const LOG_CLIENT_GONE = (method: string, url: string) => `${method} ${url}: the client went away before its request was read`;
export const LOG_BACKLOG_FULL = (max: number, refusals: number) =>
  `Backlog full (maxQueuedRuns: ${max}): ${refusals} trigger(s) answered 503 since the last such warning; bots are not keeping up with accepts`;
export const LOG_ACCOUNT_BACKLOG_FULL = (share: number, refusals: ReadonlyMap<string, number>) =>
  `Account backlog share full (${share} waiting runs, half of maxQueuedRuns): triggers answered 429 since the last such warning, by account: ${[...refusals].map(([account, n]) => `${account} ${n}`).join(', ')}; those accounts' bots are not keeping up with their accepts`;

// IP allow-lists and the audit log (docs/security.md)
export const IP_NOT_ALLOWED = (ip: string) => `This trigger does not accept requests from ${ip}`;
export const BAD_ALLOWED_IP = (entry: string) =>
  `allowedIps: "${entry}" is not an IPv4 or IPv6 address or CIDR (such as 203.0.113.7, 203.0.113.0/24 or 2001:db8::/32)`;
export const ALLOWED_IPS_NOT_A_LIST = (max: number) =>
  `allowedIps must be a list of at most ${max} addresses or CIDRs ([] lets every address in)`;
export const LOG_AUDIT_WRITE_FAILED = (action: string, error: string) =>
  `Audit log: the change was made but its entry (${action}) could not be stored: ${error}`;
export const AUDIT_RETENTION_DELETED = (deleted: number, days: number) => `Deleted ${deleted} audit log entr(ies) older than ${days} days`;

// Health probes (WebhookTriggerProbes, the terminus indicator; docs/observability.md)
export const PROBE_NO_ANSWER = (ms: number) => `no answer within ${ms} ms`;
export const PROBE_PART_FAILED = (part: string, error: string) => `${part}: ${error}`;
export const PROBE_BACKLOG_FULL = (queued: number, max: number) =>
  `${queued} run(s) waiting to start, at or over maxQueuedRuns (${max}): triggers are answered 503`;
export const PROBE_NO_WORKER = (withinMs: number) => `no worker seen in the last ${withinMs / 1000} s: accepted runs wait in the queue`;
export const PROBES_NOT_FOUND =
  'WebhookTriggerHealthIndicator: WebhookTriggerProbes not found; import WebhookTriggerModule.forRoot() in this application';
export const TRIGGERS_MOVED_ACCOUNT = (botId: string, accountId: string, count: number) =>
  `The ${count} trigger(s) of bot "${botId}" now charge account "${accountId}", the bot's account (it changed since they were created)`;
export const TESTING_PACKAGE_MISSING =
  'The testing kit (createWebhookTriggerHarness(), runBot()) needs @nestjs/testing: npm install -D @nestjs/testing (the version of your @nestjs/core)';
export const TESTING_NOT_A_BOT = (name: string) =>
  `WebhookTriggerTestingModule: bots lists ${name}, which is not a bot: decorate it with @WebhookBot({ id }), or give it in providers if your bots inject it`;
export const TESTING_UNKNOWN_BOT = (botId: string, known: string[]) =>
  `The harness has no bot "${botId}" (its bots: ${known.length ? known.join(', ') : 'none'}): give its class in bots ` +
  '(createWebhookTriggerHarness({ bots }) or WebhookTriggerTestingModule.forRoot({ bots })), or trigger one of your triggers: { id, key }';
export const TESTING_MISSING_PROVIDER = (needing: string, missing: string, where: string) =>
  `The testing kit: ${needing} needs ${missing}, which it was not given: add it to the providers of ${where}, ` +
  `the real one or a fake ({ provide: ${missing}, useValue: … }), or the module of yours that exports it to its imports`;
export const TESTING_FAKE_TIMERS =
  "TestClock.tick() needs a real setImmediate (it lets the app's work go on between timers), and fake timers replaced it " +
  "(jest.useFakeTimers(), vi.useFakeTimers() or fakeTimers in your config). The kit needs none: its clock moves the module's time. " +
  "Call jest.useRealTimers() (vi.useRealTimers()) in specs that use the kit, or keep it real: jest.useFakeTimers({ doNotFake: ['setImmediate'] })";
