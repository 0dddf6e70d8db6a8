// @ts-check
// What the server put in the page: the mount's URLs and flags (`<html data-*>`) and its config (`data-config`,
// JSON: run statuses, callback events, page size), so nothing here copies a server constant.

/** @typedef {import('../src/admin/admin-api-answers.js').AdminPageConfig} AdminPageConfig */
/** @typedef {import('../src/persistence/records.js').InvocationStatus} InvocationStatus */

/**
 * @typedef {AdminPageConfig & {
 *   api: string,
 *   readOnly: boolean,
 *   showInputs: boolean,
 *   signOutPath: string,
 *   active: ReadonlySet<string>,
 * }} AdminSettings
 */

/**
 * The settings from the `<html>` element's data attributes (a DOMStringMap, or any string record).
 * @param {Record<string, string | undefined>} dataset
 * @returns {AdminSettings}
 */
export function parseSettings(dataset) {
  /** @type {AdminPageConfig} */
  const config = JSON.parse(dataset.config || '{}');
  return {
    ...config,
    api: dataset.api || '',
    readOnly: dataset.readOnly === 'true',
    showInputs: dataset.showInputs === 'true',
    signOutPath: dataset.signOutPath || '',
    active: new Set(config.activeStatuses),
  };
}

/** @type {AdminSettings | undefined} */
let read;

/** The page's settings, read once (on first use: a module that imports this one may load outside a page). */
export function settings() {
  read ??= parseSettings(document.documentElement.dataset);
  return read;
}

/**
 * Whether a run in `status` may still change (queued or running), as the server says.
 * @param {string} status
 */
export function isActive(status) {
  return settings().active.has(status);
}
