// @ts-check
// Facts about a run that the run detail shows, and the replay form's inputs. Pure (unit-tested).

/** @typedef {import('../src/admin/admin-api-answers.js').AdminRunAnswer} AdminRunAnswer */
/** @typedef {{ status: string, at: string }} Step */

/**
 * The run's steps when the server sent no timeline: queued at `createdAt`, running at `startedAt`, the final
 * status at `finishedAt` (the steps that happened).
 * @param {Pick<AdminRunAnswer, 'status' | 'createdAt' | 'startedAt' | 'finishedAt'>} run
 * @returns {Step[]}
 */
export function defaultTimeline(run) {
  /** @type {Step[]} */
  const steps = [{ status: 'queued', at: run.createdAt }];
  if (run.startedAt) steps.push({ status: 'running', at: run.startedAt });
  if (run.finishedAt) steps.push({ status: run.status, at: run.finishedAt });
  return steps;
}

/**
 * The timeline to show: the server's, or the default one.
 * @param {Pick<AdminRunAnswer, 'status' | 'createdAt' | 'startedAt' | 'finishedAt'> & { timeline?: Step[] }} run
 * @returns {Step[]}
 */
export function timelineOf(run) {
  const steps = Array.isArray(run.timeline) && run.timeline.length > 0 ? run.timeline : defaultTimeline(run);
  return steps.filter((step) => step && step.at);
}

/**
 * What the replay form starts with: the inputs as JSON when shown, nothing when hidden, `{}` when none.
 * @param {Pick<AdminRunAnswer, 'inputs' | 'inputsHidden'>} run
 */
export function initialReplayText(run) {
  const shown = !run.inputsHidden && run.inputs !== undefined && run.inputs !== null;
  if (shown) return JSON.stringify(run.inputs, null, 2);
  return run.inputsHidden ? '' : '{}';
}

/**
 * The replay form's text as inputs: a JSON object, or the sentence that says what is wrong.
 * @param {string} text
 * @param {boolean} inputsHidden an empty form then means "write something first" (Replay sends the run's own)
 * @returns {{ inputs: Record<string, unknown> } | { error: string }}
 */
export function parseReplayInputs(text, inputsHidden) {
  if (inputsHidden && text.trim() === '') return { error: 'Write the inputs to send first, or choose “Replay” to send the run’s own.' };
  /** @type {unknown} */
  let inputs;
  try {
    inputs = JSON.parse(text);
  } catch (error) {
    return { error: `The inputs are not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
    return { error: 'The inputs must be a JSON object, such as {} or {"name": "value"}.' };
  }
  return { inputs: /** @type {Record<string, unknown>} */ (inputs) };
}
