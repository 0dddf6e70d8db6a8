import { Injectable } from '@nestjs/common';

/**
 * Where this app serves the admin screens, told by `WebhookTriggerAdminModule` at init so the startup hints
 * can give the real path. Each mount gives a function, read when the hint is written: the path depends on
 * the global prefix and its `exclude`, which the host sets after the modules are built. A registry here
 * rather than a look-up from lifecycle/: admin/ imports lifecycle/'s folders below it, never the reverse.
 */
@Injectable()
export class AdminScreensPaths {
  private readonly paths: Array<() => string> = [];

  /** A mount, by the path it is served at (`/api/ops/webhooks`: global prefix included unless excluded). */
  add(servedPath: () => string): void {
    this.paths.push(servedPath);
  }

  /** The first mount's served path, or undefined when the screens are not mounted. */
  first(): string | undefined {
    return this.paths[0]?.();
  }
}
