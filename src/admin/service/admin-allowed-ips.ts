import { Injectable } from '@nestjs/common';
import { ClusterBus } from '../../cluster/cluster-bus.js';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { ALLOWED_IPS_NOT_A_LIST, BAD_ALLOWED_IP } from '../../errors/webhook-trigger.messages.js';
import { ALLOWED_IPS_MAX, badAllowedIp } from '../../http/ip-allow-list.js';
import { TRIGGER_ID_PATTERN } from '../../keys/ids.js';
import { TriggerRepository } from '../../persistence/trigger.repository.js';
import { AdminAudit } from '../audit/admin-audit.js';

/** A trigger's IP allow-list for the admin. Behind `WebhookTriggersAdmin`. */
@Injectable()
export class AdminAllowedIps {
  constructor(
    private readonly triggers: TriggerRepository,
    private readonly bus: ClusterBus,
    private readonly audit: AdminAudit,
  ) {}

  /**
   * Replaces the list (every entry checked first: nothing is stored when one is bad); `[]` lets every address in.
   * Returns the stored list (duplicates dropped), or null when the trigger is unknown or deleted.
   */
  async setAllowedIps(triggerId: string, allowedIps: unknown): Promise<string[] | null> {
    if (!Array.isArray(allowedIps) || allowedIps.length > ALLOWED_IPS_MAX)
      throw new WebhookAdminInputError(ALLOWED_IPS_NOT_A_LIST(ALLOWED_IPS_MAX));
    const bad = badAllowedIp(allowedIps);
    if (bad !== null) throw new WebhookAdminInputError(BAD_ALLOWED_IP(bad.slice(0, 64)));
    const list = [...new Set(allowedIps as string[])];
    if (typeof triggerId !== 'string' || !TRIGGER_ID_PATTERN.test(triggerId) || !(await this.triggers.setAllowedIps(triggerId, list))) {
      return null;
    }
    // Before answering: every node's trigger cache drops its copy, so the new list applies everywhere.
    await this.bus.announceTriggerChanged(triggerId);
    await this.audit.allowedIpsSet(triggerId, list);
    return list;
  }
}
