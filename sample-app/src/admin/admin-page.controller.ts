import { Controller, Get, Header, Inject, Redirect } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SAMPLE_APP_ROOT } from '../config.js';

export const ADMIN_PAGE = Symbol('ADMIN_PAGE');

/** Reads the page once at startup, so a missing file stops the app instead of failing later. */
export function loadAdminPage(): string {
  return readFileSync(join(SAMPLE_APP_ROOT, 'public', 'admin.html'), 'utf8');
}

/** The admin page: one static HTML file whose script talks to /admin/api with the admin token. */
@ApiExcludeController()
@Controller()
export class AdminPageController {
  constructor(@Inject(ADMIN_PAGE) private readonly page: string) {}

  @Get('admin')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  @Header('X-Frame-Options', 'DENY')
  @Header('Referrer-Policy', 'no-referrer')
  adminPage(): string {
    return this.page;
  }

  @Get()
  @Redirect('/admin', 302)
  root(): void {}
}
