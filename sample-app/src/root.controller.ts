import { Controller, Get, Redirect } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';

/** `GET /` goes to the admin screens (which send a browser without a session on to the sign-in page). */
@ApiExcludeController()
@Controller()
export class RootController {
  @Get()
  @Redirect('/admin', 302)
  root(): void {}
}
