/**
 * Lua that sets `now` to the Redis server's time in ms. Every node uses the clock of the one Redis, so
 * nodes with skewed clocks still agree on windows and expiries.
 */
export const REDIS_NOW_MS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;
