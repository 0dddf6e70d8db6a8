import { Get, Inject, Param, Req, Res } from '@nestjs/common';
import { WebhookAdminNotFoundError } from '../errors/webhook-trigger.errors.js';
import { HttpAdapterHost } from '@nestjs/core';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from './admin-options.js';
import { ADMIN_CSP, loadAdminScreenFiles, renderAdminPage, type AdminScreenFiles } from './admin-screens.js';

/**
 * The screens: one page (hash routes inside it) and its two assets, all from the package (no CDN).
 * Mounted by `WebhookTriggerAdminModule` at its path with the host's guards.
 */
export class AdminScreensController {
  private readonly files: AdminScreenFiles = loadAdminScreenFiles();

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings,
  ) {}

  @Get()
  page(@Req() request: unknown, @Res({ passthrough: true }) response: unknown): string {
    const { httpAdapter } = this.adapterHost;
    // The mount as the browser sees it (global prefix and version included), so asset and API URLs are right.
    const base = new URL(String(httpAdapter.getRequestUrl(request)), 'http://x').pathname.replace(/\/+$/, '');
    this.headers(response, 'text/html; charset=utf-8');
    httpAdapter.setHeader(response, 'Content-Security-Policy', ADMIN_CSP);
    httpAdapter.setHeader(response, 'X-Frame-Options', 'DENY');
    httpAdapter.setHeader(response, 'Referrer-Policy', 'no-referrer');
    return renderAdminPage(this.files, base, this.settings);
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res({ passthrough: true }) response: unknown): string {
    const asset = this.files.assets.get(file);
    if (!asset) throw new WebhookAdminNotFoundError(`No admin asset ${file.slice(0, 100)}`);
    this.headers(response, asset.type);
    // Kept as text: Nest's Express adapter answers a returned Buffer as JSON ({"type":"Buffer","data":[…]}).
    return asset.body;
  }

  private headers(response: unknown, type: string): void {
    const { httpAdapter } = this.adapterHost;
    httpAdapter.setHeader(response, 'Content-Type', type);
    httpAdapter.setHeader(response, 'Cache-Control', 'no-cache');
    httpAdapter.setHeader(response, 'X-Content-Type-Options', 'nosniff');
  }
}
