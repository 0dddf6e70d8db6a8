import { auditHref, botHref, hashPath, overviewHref, parseRoute, runHref } from './routes.js';

describe('parseRoute', () => {
  it.each([
    ['', { kind: 'bots' }],
    ['#/', { kind: 'bots' }],
    ['#/bots', { kind: 'bots' }],
    ['#/bots/echo/settings', { kind: 'bot', botId: 'echo', tab: 'settings' }],
    ['#/bots/a%20b/history/', { kind: 'bot', botId: 'a b', tab: 'history' }],
    ['#/bots/echo', { kind: 'redirect', hash: '#/bots/echo/settings' }],
    ['#/bots/echo/', { kind: 'redirect', hash: '#/bots/echo/settings' }],
    ['#/invocations/r-1', { kind: 'run', id: 'r-1' }],
    ['#/invocations/%E0%A4%A', { kind: 'run', id: '%E0%A4%A' }],
    ['#/bots/echo/keys', { kind: 'not-found' }],
    ['#/nowhere', { kind: 'not-found' }],
  ])('%s is %j', (hash, route) => {
    expect(parseRoute(hashPath(hash))).toEqual(route);
  });

  it('round-trips the links it makes', () => {
    expect(parseRoute(hashPath(botHref('a/b', 'history')))).toEqual({ kind: 'bot', botId: 'a/b', tab: 'history' });
    expect(parseRoute(hashPath(runHref('x?y')))).toEqual({ kind: 'run', id: 'x?y' });
  });
});

describe('the audit log routes', () => {
  it('reads #/audit and #/audit/triggers/:id, and makes them', () => {
    expect(parseRoute('/audit')).toEqual({ kind: 'audit' });
    expect(parseRoute('/audit/triggers/trg_A%2FB')).toEqual({ kind: 'audit', triggerId: 'trg_A/B' });
    expect(auditHref('trg_A/B')).toBe('#/audit/triggers/trg_A%2FB');
    expect(auditHref()).toBe('#/audit');
  });
});

describe('the Overview routes', () => {
  it('reads #/overview (the last hour) and #/overview/day, and makes them', () => {
    expect(parseRoute('/overview')).toEqual({ kind: 'overview', window: 'hour' });
    expect(parseRoute('/overview/hour')).toEqual({ kind: 'overview', window: 'hour' });
    expect(parseRoute(hashPath(overviewHref('day')))).toEqual({ kind: 'overview', window: 'day' });
    expect(overviewHref()).toBe('#/overview');
    expect(parseRoute('/overview/week')).toEqual({ kind: 'not-found' });
  });
});
