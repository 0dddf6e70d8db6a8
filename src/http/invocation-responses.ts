import { RUN_UNSUCCESSFUL } from '../errors/webhook-trigger.messages.js';
import type { InvocationRecord } from '../persistence/records.js';
import type { StatusResponseDto, SyncResponseDto } from './webhook-trigger.dto.js';

/** A finished run as the sync endpoint answers it; the spec's success shape stays exactly `{ success, outputs }`. */
export function syncBody(invocation: InvocationRecord): SyncResponseDto {
  const { status, outputs, error } = invocation;
  if (status === 'succeeded') return { success: true, outputs: outputs ?? [] };
  return { success: false, status, outputs: outputs ?? [], error: error ?? { message: RUN_UNSUCCESSFUL } };
}

/** A run as the status and cancel endpoints answer it. */
export function statusBody(invocation: InvocationRecord): StatusResponseDto {
  const { id, status, createdAt, startedAt, finishedAt, outputs, error } = invocation;
  const unsuccessful = status === 'failed' || status === 'cancelled' || status === 'timed_out';
  const body: StatusResponseDto = {
    success: !unsuccessful,
    invocation: {
      id,
      status,
      createdAt: createdAt.toISOString(),
      startedAt: startedAt?.toISOString() ?? null,
      finishedAt: finishedAt?.toISOString() ?? null,
    },
  };
  if (status === 'succeeded') body.outputs = outputs ?? [];
  // A running (or retried, queued again) run shows what its bot emitted so far.
  if ((status === 'running' || status === 'queued') && outputs && outputs.length > 0) body.outputs = outputs;
  if (unsuccessful) {
    body.outputs = outputs ?? [];
    body.error = error ?? { message: RUN_UNSUCCESSFUL };
  }
  return body;
}
