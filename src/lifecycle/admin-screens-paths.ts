import { Injectable } from '@nestjs/common';

/**
 * Where this app mounted the admin screens (`WebhookTriggerAdminModule`'s `path`, without the global
 * prefix), told by that module at init so the startup hints can give the real path. A registry here rather
 * than a look-up from lifecycle/: admin/ imports lifecycle/'s folders below it, never the reverse.
 */
@Injectable()
export class AdminScreensPaths {
  private readonly paths: string[] = [];

  add(path: string): void {
    this.paths.push(path);
  }

  /** The first mount's path, or undefined when the screens are not mounted. */
  first(): string | undefined {
    return this.paths[0];
  }
}
