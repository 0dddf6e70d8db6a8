#!/usr/bin/env bash
# Mutation checks (CONTRIBUTING.md, "Mutation checks"): each mutation below breaks one promise of the docs on
# purpose, in a scratch copy of the working tree (never in the tree itself), and the test named for it must
# FAIL there. Exits non-zero when a mutation no longer applies (the code moved: update its row), survives (no
# test failed: a promise is untested), or its test did not run at all. Needs PostgreSQL and Redis like the
# service suites:
#   WEBHOOK_TEST_POSTGRES_URL=postgres://… WEBHOOK_TEST_REDIS_URL=redis://… bash scripts/mutation-check.sh [name…]
#   bash scripts/mutation-check.sh --list         the table of CONTRIBUTING.md, from the rows below
#   bash scripts/mutation-check.sh --check-docs   fails when CONTRIBUTING.md's table is not that table
# A run of every row (no names) checks the docs first. MUTATION_JOBS (default 2) mutations run at a time, each
# lane in a scratch copy of its own; each runs only the test named for it (jest -t), never a whole suite.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

# name | file | exact text | its replacement | test file | test name (jest -t, matched literally) | the promise
# The exact text must occur exactly once in the file; "\n" in it (and in its replacement) is a line break; no
# field may hold a "|".
# Rows sharing a name are ONE mutation, applied together (a change that takes two edits); the first row names
# the test and the promise, the others carry "-" there.
MUTATIONS=(
  # --- credits: never below zero, on every accept path ---
  "debit-below-zero-sql|src/persistence/sql/sql-credit-ledger.ts|WHERE id = ? AND credits >= ?|WHERE id = ? AND credits + 1 >= ?|test/contracts/storage.spec.ts|debits only what an account holds, atomically|a debit never takes a balance below zero (SQLite, and PostgreSQL in a transaction)"
  "accept-unpaid|src/persistence/webhook-storage.ts|throw new NotEnoughCreditsError(run.accountId, run.credits);|return { kind: 'accepted' };|test/e2e/credits.e2e-spec.ts|answers 402 when the account has fewer credits than the bot costs|a run the account cannot pay for is refused (402), stored and run never"
  "trigger-account-stale|src/lifecycle/trigger-accounts.ts|const moved = await this.triggers.assignBotAccount(bot.id, bot.accountId);|const moved: string[] = [];|test/e2e/credits.e2e-spec.ts|charges the bot's account of now|a run is charged to its bot's account of now, also for a trigger created while the bot had another (it was refused 402, or charged the old account)"
  "trigger-account-sql|src/persistence/sql/sql-trigger.repository.ts|SET account_id = ? WHERE bot_id = ? AND account_id <> ? RETURNING id|SET account_id = ? WHERE bot_id = ? AND deleted_at IS NULL AND account_id <> ? RETURNING id|test/contracts/storage.spec.ts|to the bot's account of now|a bot's triggers, deleted ones too (their pending callback deliveries are counted on their account), move to the bot's account (SQLite, PostgreSQL)"
  "batch-below-zero-postgres|src/persistence/sql/postgres-run-acceptor.ts|a.credits >= d.amount RETURNING a.id), |a.credits + 1 >= d.amount RETURNING a.id), |test/services/postgres-group-commit.e2e-spec.ts|one credit short of a whole batch|PostgreSQL's one-statement batch debits an account only when it covers the whole batch"
  "batch-decide-postgres|src/persistence/sql/postgres-run-acceptor.ts|balance < run.credits) {|balance + 1 < run.credits) {|test/services/postgres-group-commit.e2e-spec.ts|a batch split by too few credits|PostgreSQL's batch transaction accepts, in arrival order, only what the credits left cover"
  "batch-split-error-after-charge-postgres|src/persistence/sql/postgres-run-acceptor.ts|      outcomes = new Map(rest.map((p) => [p.run.id, failed]));|      throw error;|test/services/postgres-group-commit.e2e-spec.ts|whose second step fails|PostgreSQL's batch split by too few credits answers the runs its first statement stored and charged as accepted when its second step fails (a lock or statement time-out, a deadlock, a lost connection): only the requests that step decided hear the error (every caller of the batch got it: a 500 or 503 after the charge, and the run was never dispatched)"
  # --- answers show only what is stored ---
  "sqlite-read-uncommitted|src/persistence/sql/sqlite-executor.ts|(tx instanceof SqliteTransaction ? this.writer : this.reader).exec(sql, params)|this.writer.exec(sql, params)|src/persistence/sql/sqlite-executor.spec.ts|a read outside a unit never sees a write that waits for its batch to commit|on SQLite, a read outside a unit (every answer) sees only committed rows, never a group commit in progress"
  "sqlite-unit-not-exclusive|src/persistence/sql/sqlite-executor.ts|while (!this.busy && this.waiting.length > 0) {|while (this.waiting.length > 0) {|src/persistence/sql/sqlite-executor.spec.ts|holds every other write while a unit is open between its awaits|on SQLite, no write lands inside another caller's open unit, and nothing commits while one is open"
  "sqlite-statement-journal-file|src/persistence/typeorm/webhook-data-source.ts|exec('PRAGMA temp_store = MEMORY')|exec('PRAGMA temp_store = DEFAULT')|src/persistence/sql/sqlite-executor.spec.ts|statement journals in memory|on SQLite, the group commit's statement journals stay in memory (as temporary files they tripled a run's INSERT)"
  # --- idempotency: same run, one charge, 422 for another body ---
  "idempotency-forgets|src/invocations/invocation.service.ts|const since = new Date(now.getTime() - this.options.idempotencyTtlMs);|const since = now;|test/e2e/idempotency.e2e-spec.ts|returns the first invocation for a repeated key on the same trigger: one charge, one row, one run|a repeated Idempotency-Key within its time to live answers the first run, charged once"
  "idempotency-other-body|src/invocations/invocation.service.ts|if (outcome.earlier.requestHash !== (requestHash ?? null)) throw new IdempotencyKeyReusedError();|if (false) throw new IdempotencyKeyReusedError();|test/e2e/idempotency.e2e-spec.ts|refuses the same key with another body (422, nothing charged)|the same key with another body is refused (422)"
  "idempotency-batch-postgres|src/persistence/sql/postgres-run-acceptor.ts|if (Number(row.created_at) >= since.get(key)!) {|if (Number(row.created_at) < since.get(key)!) {|test/services/postgres-group-commit.e2e-spec.ts|idempotency repeats inside one batch|PostgreSQL's batches answer a repeated key with the earlier run, within a batch and across batches and nodes"
  # --- cancel: refund only of queued runs, once ---
  "refund-queued-cancel|src/invocations/invocation.service.ts|if (queued.credits > 0) await this.storage.ledger.refund(queued.accountId, queued.credits, tx);|if (false) await this.storage.ledger.refund(queued.accountId, queued.credits, tx);|test/e2e/status-and-cancel.e2e-spec.ts|cancels a queued run once (5 concurrent cancels), refunds it once|cancelling a queued run refunds its credits"
  "refund-twice|src/invocations/invocation.service.ts|        if (!stored) return false;\n||test/e2e/status-and-cancel.e2e-spec.ts|lets exactly one of 5 cancels that all saw the run unfinished store it|a queued run is refunded once, however many cancels race"
  "refund-running-cancel|src/invocations/invocation.service.ts|this.executor.abort(running.id, RunStop.cancelled());|await this.storage.ledger.refund(running.accountId, running.credits);\n        this.executor.abort(running.id, RunStop.cancelled());|test/e2e/status-and-cancel.e2e-spec.ts|cancels a running run: its signal fires, a waiting sync returns at once, and nothing is refunded|cancelling a running run refunds nothing"
  # --- keys ---
  "admin-cross-site-credentialless|src/admin/admin-change.guard.ts|    if (isCrossSiteRequest(headers)|    if (isCrossSiteRequest(headers) && carriesAmbientCredentials(headers)|test/e2e/admin-api.e2e-spec.ts|refuses a change another site sent, with no credential at all|an admin change another site sent is refused whatever the browser attached, nothing included (a host guard that trusts the network)"
  "admin-ambient-basic-only|src/admin/admin-change.guard.ts|(headers.authorization !== undefined && !BEARER.test(headers.authorization))|(headers.authorization ?? '').toLowerCase().startsWith('basic ')|test/e2e/admin-api.e2e-spec.ts|asks the admin header of a change with a credential the browser attaches|an admin change with any credential a browser attaches (a cookie, Basic, Negotiate, NTLM, Digest) needs \`X-Webhook-Admin: 1\`"
  "key-not-checked|src/http/trigger-key.guard.ts|!this.keys.check(trigger, presented)) await|(this.keys.check(trigger, presented) && false)) await|test/e2e/trigger-and-body.e2e-spec.ts|answers 401 for a missing, empty or wrong X-Key, and for the key of another trigger|a wrong key, or another trigger's, is refused (401)"
  "signed-headers-before-key|src/http/trigger-key.guard.ts|    if (signing !== 'instead-of-key') {\n      const presented|    if (signing !== 'off') await this.signedRequests.beforeBody(trigger, raw, false, failures, () => this.admit(failures, trigger));\n    if (signing !== 'instead-of-key') {\n      const presented|test/e2e/signed-requests.e2e-spec.ts|tells a wrong key nothing of the trigger's signing|a wrong X-Key on a trigger signed with its key gets the X-Key 401, never words about its signing"
  "unverified-bodies-unbounded|src/http/signed-requests.ts|    if (this.unverified.of(failures.key) >= failures.limit)|    if (this.unverified.of(failures.key) > Infinity)|test/e2e/hostile-input.e2e-spec.ts|reads at most failedKeyLimit at once from one address|a trigger signed instead of a key reads at most \`failedKeyLimit\` unverified bodies of one address at once; the next is 429 before its body"
  "unverified-place-kept|src/http/signed-requests.ts|    verified();\n|    void verified;\n|src/http/signed-requests.spec.ts|reads at most failedKeyLimit bodies of one address not verified yet|a signed body's place among its address's unverified ones is given back once its signature is judged"
  "unverified-close-kept|src/http/signed-requests.ts|    raw.once('close', giveBack);|    void giveBack;|src/http/signed-requests.spec.ts|reads at most failedKeyLimit bodies of one address not verified yet|a signed body's place is given back when its exchange ends before the signature is judged (a client gone, a 413)"
  "key-hash-prefix|src/keys/trigger-keys.ts|timingSafeEqual(hash, stored)|timingSafeEqual(hash.subarray(0, 4), stored.subarray(0, 4))|src/keys/trigger-keys.spec.ts|compare the whole hash|the whole SHA-256 of the key is compared"
  "key-expiry-ignored|src/keys/trigger-keys.ts|key.expiresAt.getTime() > now|true|test/e2e/trigger-keys.e2e-spec.ts|rotate: the old key works until the grace period ends on the clock|a key is refused once its expiry or a rotation's grace end passed (on the module's Clock)"
  "key-revoke-unannounced|src/admin/service/admin-trigger-keys.ts|    await this.bus.announceTriggerChanged(triggerId);\n    await this.audit.keyRevoked(triggerId, keyId);|    await this.audit.keyRevoked(triggerId, keyId);|test/services/trigger-cache.e2e-spec.ts|revoke across two nodes|a revoked key is refused on every node within 100 ms"
  "wrong-key-spends-budget|src/http/trigger-key.guard.ts|    if (signing !== 'instead-of-key') await this.admit(failures, trigger);\n||src/http/trigger-key.guard.limits.spec.ts|counts only requests that passed the key check|only requests with the right key count in a trigger's and an account's limits"
  "wrong-key-spends-budget|src/http/trigger-key.guard.ts|    const signing = this.signedRequests.signingOf(trigger, context.getHandler());|    const signing = this.signedRequests.signingOf(trigger, context.getHandler());\n    await this.admit(failures, trigger);|-|-|-"
  "other-trigger-run|src/invocations/invocation.service.ts|return invocation && invocation.triggerId === trigger.id ? invocation : null;|return invocation;|test/e2e/status-and-cancel.e2e-spec.ts|applies the sync rules: 401 for a missing or wrong key, 404 for unknown, malformed or another trigger|one trigger's key never reads (nor cancels) another trigger's run"
  # --- rate limits: exact counts, counted only when every limit admits ---
  "limit-count-memory|src/rate-limits/in-memory-rate-limit.storage.ts|const full = w.hits.length === limit;|const full = w.hits.length === limit + 1;|src/rate-limits/in-memory-rate-limit.storage.spec.ts|accepts exactly \`limit\` requests in a window|the in-process limits admit exactly \`limit\` per window"
  "limit-atomic-memory|src/rate-limits/in-memory-rate-limit.storage.ts|const retryMs = this.hit(key, ttl, limit, false);|const retryMs = this.hit(key, ttl, limit, true);|src/rate-limits/in-memory-rate-limit.storage.spec.ts|a refusal by the account counts nothing in the trigger's limit|in process, a request is counted only when every limit admits it"
  "limit-count-redis|src/redis/redis-rate-limit.storage.ts|    if count >= limit then\n      local first|    if count > limit then\n      local first|test/services/redis-rate-limit.e2e-spec.ts|50 concurrent admits from two nodes, trigger limit 10|Redis limits admit exactly \`limit\` per window, across nodes"
  "limit-atomic-redis|src/redis/redis-rate-limit.storage.ts|      refusing, wait = i, tonumber(first[2]) + ttl - now|      for j = checkOnly + 1, i - 1 do redis.call('ZADD', KEYS[k + j], string.format('%d', now), member) end\n      refusing, wait = i, tonumber(first[2]) + ttl - now|test/services/redis-rate-limit.e2e-spec.ts|a refusal by the account counts nothing in the trigger's limit|in Redis, a request is counted only when every limit admits it"
  "limit-batch-redis|src/redis/redis-rate-limit.storage.ts|  k = k + n\n|  k = k + 0\n|test/services/redis-rate-limit.e2e-spec.ts|admissions that arrive together share one script call|in Redis, each admission of a batch is judged by its own windows"
  "host-throttler-skip|src/http/host-throttler.ts|    const skip = !this.options.applyHostThrottler;|    const skip = false;|test/e2e/host-settings.e2e-spec.ts|counts only the module's limits|a host's global ThrottlerGuard never counts the webhook routes"
  "version-neutral|src/http/webhook-trigger.controller.ts|@Controller({ path: WEBHOOKS_PATH, version: VERSION_NEUTRAL })|@Controller({ path: WEBHOOKS_PATH })|test/e2e/host-settings.e2e-spec.ts|keeps the spec's paths, codes and bodies|the webhook routes carry no version segment whatever versioning the host enables"
  "failed-keys-redis|src/redis/redis-rate-limit.storage.ts|\nif count >= limit then|\nif count > limit then|test/services/redis-rate-limit.e2e-spec.ts|checkFailures counts only failures, and once the window is full refuses|Redis answers exactly \`failedKeyLimit\` wrong keys per client IP and window"
  # --- a finished run never changes, on every write path ---
  "finished-changes-sql|src/persistence/sql/sql-invocation.repository.ts|WHERE id = ? AND status = ?\${owner}|WHERE id = ? AND (status = ? OR status = 'succeeded')\${owner}|test/contracts/storage.spec.ts|never changes a finished run|a finished run never changes: transitions on SQLite (and PostgreSQL in a transaction)"
  "finished-changes-postgres|src/persistence/sql/postgres-run-writes.ts|i.status = 'running' AND i.owner|i.status IN ('running', 'cancelled') AND i.owner|test/services/postgres-group-commit.e2e-spec.ts|a grouped outcome never overwrites a run stored|a bot's late result never overwrites a cancel (PostgreSQL's grouped outcomes)"
  "claim-finished-sql|src/persistence/sql/sql-invocation.repository.ts|WHERE id = ? AND status = 'queued' RETURNING|WHERE id = ? AND status IN ('queued', 'cancelled') RETURNING|test/contracts/storage.spec.ts|claims a queued run once, recording its owner, and only a queued one|only a queued run starts: a cancelled one never does (SQLite)"
  "claim-finished-postgres|src/persistence/sql/postgres-run-writes.ts|WHERE i.id = v.id AND i.status = 'queued'|WHERE i.id = v.id AND i.status IN ('queued', 'cancelled')|test/services/postgres-group-commit.e2e-spec.ts|claims made together are one statement|only a queued run starts: a cancelled one never does (PostgreSQL's grouped claims)"
  "renewal-waits-postgres|src/persistence/sql/sql-invocation.repository.ts|AND id = ANY(?::text[]) FOR UPDATE SKIP LOCKED)|AND id = ANY(?::text[]) FOR UPDATE)|test/services/postgres-group-commit.e2e-spec.ts|a lease renewal never waits on a run a grouped outcome holds|on PostgreSQL, a lease renewal never waits on a run a grouped outcome holds, so the two never deadlock (a deadlock aborted outcomes under load, and their finished runs were recovered as interrupted)"
  "renew-forgotten-runs-sql|src/persistence/sql/sql-invocation.repository.ts|AND id IN (SELECT value FROM json_each(?))|AND ? IS NOT NULL|test/e2e/lifecycle.e2e-spec.ts|a run whose outcome could not be stored is not renewed with the runs still in flight|a run whose outcome could not be stored is not kept from recovery by its busy owner: only the runs in flight are renewed (SQLite)"
  "renew-forgotten-runs-postgres|src/persistence/sql/sql-invocation.repository.ts|AND id = ANY(?::text[]) FOR UPDATE SKIP LOCKED)|AND ?::text[] IS NOT NULL FOR UPDATE SKIP LOCKED)|test/services/postgres-storage.e2e-spec.ts|renews only the runs named that the owner still holds|only the runs named are renewed, on every store (PostgreSQL's renewal too)"
  "outcome-deadlock-lost-postgres|src/persistence/sql/postgres-run-writes.ts|if (attempt >= CONFLICT_ATTEMPTS |if (attempt >= 1 |test/services/postgres-group-commit.e2e-spec.ts|grouped outcomes that PostgreSQL aborts in a deadlock are written again|on PostgreSQL, grouped outcomes (and claims) aborted in a deadlock are written again, never lost"
  "accept-before-claims-postgres|src/persistence/sql/postgres-run-acceptor.ts|    if (batch.some((p) => p.run.runsWaiting)) await this.claimsInFlight();\n||test/services/postgres-group-commit.e2e-spec.ts|an accept batch waits for the claims in flight|on PostgreSQL, a node behind on its runs lets its claims in flight go before its next accepts, so runs keep up with accepts instead of piling up a backlog (then 503)"
  "accept-waits-always-postgres|src/persistence/sql/postgres-run-acceptor.ts|if (batch.some((p) => p.run.runsWaiting)) await|if (batch.length > 0) await|test/services/postgres-group-commit.e2e-spec.ts|otherwise it goes at once|on PostgreSQL, a node that is not behind never holds its accepts for claims (a worker's claim of the run before does not delay the next trigger)"
  "accept-behind-unsaid|src/invocations/invocation.service.ts|      runsWaiting: this.runner.behind(),|      runsWaiting: false,|src/invocations/invocation.service.spec.ts|tells the accept step whether runs were waiting|the accept step hears when its node is behind on its runs (what lets PostgreSQL's claims go first)"
  "behind-unsaid-in-process|src/runs/in-process.runner.ts|    return this.waiting !== 0;|    return false;|src/runs/in-process.runner.spec.ts|is behind while any waits|the in-process runner says it is behind while runs wait for its slots"
  "append-after-end|src/persistence/sql/sql-invocation.repository.ts|WHERE id = ? AND status = 'running' AND owner = ?\`,|WHERE id = ? AND owner = ?\`,|test/contracts/storage.spec.ts|never changes a finished run|an emitted output is never added to a finished run"
  "recover-finished|src/persistence/sql/sql-invocation.repository.ts|WHERE id = ? AND status = 'running' AND \${stillLost}|WHERE id = ? AND \${stillLost}|test/contracts/storage.spec.ts|never changes a finished run|recovery of an interrupted run never touches a finished one"
  "owner-on-finish-sql|src/persistence/sql/sql-invocation.repository.ts|const owner = condition.owner === undefined ? '' : ' AND owner = ?';|const owner = '';|test/contracts/storage.spec.ts|finishes a running run only for its owner|only the run's owner stores its outcome (SQLite, and PostgreSQL in a transaction)"
  "owner-on-finish-sql|src/persistence/sql/sql-invocation.repository.ts|if (condition.owner !== undefined) params.push(condition.owner);|void condition.owner;|-|-|-"
  "owner-on-finish-postgres|src/persistence/sql/postgres-run-writes.ts|AND i.owner = v.owner |       |test/services/postgres-group-commit.e2e-spec.ts|outcomes stored together are one statement, each only by its run's owner|only the run's owner stores its outcome (PostgreSQL's grouped outcomes)"
  "lock-renewal|src/redis/bullmq.runner.ts|      stalledInterval: this.options.runLeaseMs,|      stalledInterval: this.options.runLeaseMs, skipLockRenewal: true,|test/services/bullmq-runner.e2e-spec.ts|a slow worker is not taken for a dead one|a BullMQ worker keeps its job while the bot runs, however long"
  # --- runs: attempts, caps, backlog ---
  "max-run-attempts|src/lifecycle/interrupted-runs.ts|run.attempts >= this.options.maxRunAttempts|run.attempts > this.options.maxRunAttempts|src/lifecycle/interrupted-runs.spec.ts|stops a retryInterrupted run that lost its process on each of maxRunAttempts attempts|a run interrupted on each of \`maxRunAttempts\` attempts is stored failed, not retried again"
  "attempts-not-counted|src/persistence/sql/sql-invocation.repository.ts|attempts = attempts + 1 WHERE|attempts = attempts WHERE|test/contracts/storage.spec.ts|claims a queued run once, recording its owner, and only a queued one|each start of a run counts as an attempt (SQLite)"
  "attempts-not-counted-postgres|src/persistence/sql/postgres-run-writes.ts|attempts = i.attempts + 1 FROM|attempts = i.attempts FROM|test/services/postgres-group-commit.e2e-spec.ts|claims made together are one statement|each start of a run counts as an attempt (PostgreSQL's grouped claims)"
  "account-cap-in-process|src/runs/in-process.runner.ts|account.running < cap)|account.running <= cap)|src/runs/in-process.runner.spec.ts|holds each account to maxConcurrentRunsPerAccount|one account never runs more than \`maxConcurrentRunsPerAccount\` at once (one process)"
  "total-cap-in-process|src/runs/in-process.runner.ts|while (!this.executor.draining && this.running < max &&|while (!this.executor.draining && this.running <= max &&|src/runs/in-process.runner.spec.ts|never runs more than maxConcurrentRuns in all|a process never runs more than \`maxConcurrentRuns\` at once"
  "account-cap-redis|src/redis/account-run-slots.ts|redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then|redis.call('ZCARD', KEYS[1]) <= tonumber(ARGV[2]) then|test/services/bullmq-fairness.e2e-spec.ts|the slot scripts: take up to the cap, refuse past it|one account never runs more than \`maxConcurrentRunsPerAccount\` at once, across BullMQ workers"
  "fair-share-fewest|src/runs/in-process.runner.ts|for (const level of this.levels) {|for (const level of [...this.levels].reverse()) {|src/runs/in-process.runner.spec.ts|gives a freed slot to the account running the fewest|a freed slot goes to the account running the fewest (in process)"
  "slot-freed-when-bot-done|src/runs/in-process.runner.ts|run(() => slot.release())|run(() => undefined)|src/runs/in-process.runner.spec.ts|frees the slot when the bot is done, before its outcome is stored|a slot bounds the bot's main(), not the write of its outcome"
  "reserve-past-waiting|src/runs/in-process.runner.ts|this.waiting > 0|this.waiting > 1|src/runs/in-process.runner.spec.ts|never reserves past a waiting run|a run accepted as running never passes a run waiting for a slot"
  "line-memory|src/runs/in-process.runner.ts|level.retain(isLive);|void isLive;|src/runs/in-process.runner.spec.ts|behind a backlog of 60,000 runs of one account|the in-process line's memory is bounded by its accounts, not by the runs it started"
  "account-dropped-late-outcome|src/runs/in-process.runner.ts| && this.accounts.get(account.id) === account) {|) {|src/runs/in-process.runner.spec.ts|holds an account to its cap and counts its backlog after its runs' outcomes are stored out of order|one account never runs more than \`maxConcurrentRunsPerAccount\` at once in a process, and its waiting runs count in its share of \`maxQueuedRuns\`, whatever order its runs' outcomes are stored in (a late outcome dropped the account's newer entry: its next runs escaped the cap and the share)"
  "fair-share-bullmq|src/redis/bullmq-run-queue.ts|opts: { jobId: run.id, priority: priorities[i] }|opts: { jobId: run.id, priority: 1 }|test/services/bullmq-fairness.e2e-spec.ts|two accounts with deep backlogs each get half the slots across the workers|BullMQ workers share slots fairly: a newcomer's first run starts within one run's duration"
  "queue-count-never-expires-bullmq|src/redis/account-queue-positions.ts|redis.call('PEXPIRE', KEYS[1], ARGV[1])\nreturn before|-- no expiry\nreturn before|test/services/bullmq-fairness.e2e-spec.ts|the queue positions: a batch's runs come after their account's runs pending|on BullMQ an account's queue-position count expires 10 minutes after its last enqueue (or reported end), so a count left too high heals"
  "backlog-own-jobs-bullmq|src/redis/run-queue-backlog.ts|    return this.atRead + this.dispatchedJobs - this.enqueuedAtRead;|    return this.atRead;|test/services/bullmq-backlog.e2e-spec.ts|from the moment it dispatches one|on BullMQ a node counts its own jobs in maxQueuedRuns at once, before its next read of the queue"
  "accept-claim-sql|src/persistence/sql/sql-invocation.repository.ts|claim ? 'running' : 'queued',|'queued',|test/contracts/storage.spec.ts|stores a run its accept step claimed as running|a run accepted as running is stored running, owned and leased, and cannot be claimed again"
  "accept-claim-postgres|src/persistence/sql/postgres-run-acceptor.ts|runs.map((r) => (r.claim ? 'running' : 'queued')),|runs.map(() => 'queued'),|test/e2e/lifecycle.e2e-spec.ts|stores a run accepted while a slot is free as running|a run accepted as running is stored running by PostgreSQL's grouped accept (its outcome can be stored)"
  "backlog-bound|src/runs/run-backlog.ts|return max > 0 && queued >= max;|return max > 0 && queued > max;|test/e2e/backlog-limit.e2e-spec.ts|answers 503 with Retry-After past them|over \`maxQueuedRuns\` waiting runs a trigger is refused (503), nothing stored or charged"
  "accept-lease-from-trigger-postgres|src/persistence/sql/postgres-run-acceptor.ts|const LEASE_AS_WRITTEN = \`r.lease_expires_at + (extract(epoch from clock_timestamp() - statement_timestamp()) * 1000)::bigint\`;|const LEASE_AS_WRITTEN = \`r.lease_expires_at\`;|test/services/postgres-group-commit.e2e-spec.ts|holds its whole lease from when its row is written|a run accepted as running on PostgreSQL holds a whole lease from its row's write, however long its statement waited for an account's lock (the lease ran out before the COMMIT, and recovery could take a run as it started)"
  "accept-lease-batch-wait-postgres|src/persistence/sql/postgres-run-acceptor.ts| + Math.max(0, sentAt - p.askedAt)||test/services/postgres-group-commit.e2e-spec.ts|holds its whole lease from when its row is written|a run accepted as running on PostgreSQL holds a whole lease from its row's write, however long it waited for its batch (behind a batch in flight)"
  "accept-lease-before-lock-postgres|src/persistence/sql/postgres-run-acceptor.ts| FROM r, (SELECT count(*) FROM debited) AS locked | FROM r |test/services/postgres-group-commit.e2e-spec.ts|holds its whole lease from when its row is written|PostgreSQL's one-statement batch writes no row (a free run's neither) before every debit took its account's lock, so a claimed run's lease counts from after that wait"
  "backlog-share-without-retries|src/runs/run-backlog.ts|return this.runner.backlogOf(accountId) + this.retries.pendingOf(accountId);|return this.runner.backlogOf(accountId);|src/invocations/invocation.service.spec.ts|in its share of maxQueuedRuns|an account's runs waiting to be dispatched again count in its share of \`maxQueuedRuns\` as they count in the whole (a host's runner down let one account take the whole backlog)"
  "retry-failures-kept-given-up|src/runs/in-process.runner.ts|    this.retries.forget(id);\n    this.logger.error(|    this.logger.error(|src/runs/in-process.runner.spec.ts|forgets the failures of a run it gave up|a run given up after its claim took (its start or outcome not stored) leaves nothing in DispatchRetries: memory was held per such run until shutdown, and its next failed claim waited as if it were still failing"
  "backlog-without-retries|src/runs/run-backlog.ts|return this.runner.backlog() + this.retries.pending;|return this.runner.backlog();|src/invocations/invocation.service.spec.ts|counts the runs waiting to be dispatched again|runs accepted whose runner threw, waiting to be dispatched again, count against \`maxQueuedRuns\` (an outage of a host's runner would otherwise accept and charge without bound)"
  "backlog-account-share|src/runs/run-backlog.ts|this.countOf(accountId) < share) return;|this.countOf(accountId) < share + 1_000) return;|test/e2e/backlog-limit.e2e-spec.ts|2 an account: 429 past that|when bots of several accounts share the app, one account holds at most half of \`maxQueuedRuns\` waiting runs (429 past it, nothing stored or charged), and the others' are still accepted (one account filled it, and every tenant got 503)"
  "backlog-account-share-unlogged|src/runs/run-backlog.ts|      this.noteShareRefusal(accountId, share);\n||test/e2e/backlog-limit.e2e-spec.ts|2 an account: 429 past that|a trigger refused past its account's share of the backlog is logged, naming the account (at most every 10 s): the operator learns which tenant's bots fall behind"
  "backlog-account-share-single|src/bots/webhook-bot.registry.ts|    this.accounts = new Set(this.list().map((b) => b.accountId)).size;|    this.accounts = 2;|test/e2e/backlog-limit.e2e-spec.ts|lets one account fill the whole backlog|an app whose bots all belong to one account keeps the whole \`maxQueuedRuns\` for it (no share to keep for nobody)"
  "backlog-account-share-bullmq|src/redis/bullmq.runner.ts|    return this.queueBacklog.currentOf(accountId);|    return 0;|test/services/bullmq-backlog.e2e-spec.ts|counts an account's waiting runs, not its running one|on BullMQ too, when bots of several accounts share the queue, one account holds at most half of \`maxQueuedRuns\` waiting runs, on every API node (429 past it, nothing stored or charged), and the others' are still accepted (BullMQ counted no account: one account filled the queue and every tenant got 503)"
  "backlog-account-share-bullmq-running|src/redis/account-queue-positions.ts| - (held[i] or 0)| - 0|test/services/bullmq-backlog.e2e-spec.ts|counts an account's waiting runs, not its running one|on BullMQ an account's share counts its runs waiting, not those workers hold (its pending count minus its active jobs)"
  "backlog-account-share-bullmq-single|src/redis/bullmq.runner.ts|    if (!this.registry.manyAccounts |    if (false |test/services/bullmq-backlog.e2e-spec.ts|all of it with one account when every bot is of that account|on BullMQ an app whose bots all belong to one account reads no account's runs (no Redis work for a share) and keeps the whole \`maxQueuedRuns\` for it"
  "backlog-account-count-expires|src/redis/account-queue-positions.ts|if left > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end|if false then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end|test/services/bullmq-backlog.e2e-spec.ts|runs of the account still ending keep its count of runs pending|on BullMQ an account's count of runs pending lasts while its runs still end, however long since its last accepted trigger: its share of \`maxQueuedRuns\` still holds (the count expired 10 minutes after its last enqueue, under its backlog, and the account could fill the queue again)"
  "pending-count-failed-add|src/redis/bullmq.runner.ts|      const accountId = jobAccount(job.data);|      const accountId = job.name === 'run' ? jobAccount(job.data) : undefined;|test/services/bullmq-backlog.e2e-spec.ts|as many of its triggers as its share are accepted|on BullMQ a run whose add failed after Redis counted it leaves its account's runs pending when it ends, once a sweep added it: its account's share is whole again (it stayed one run short for 10 idle minutes)"
  "pending-count-ended-batch|src/redis/account-queue-positions.ts|redis.call('SREM', KEYS[1], unpack(ARGV, 2))|redis.call('SREM', KEYS[1], ARGV[2])|test/services/bullmq-fairness.e2e-spec.ts|a run counts once however often it is enqueued or its end reported|on BullMQ each run ended on a worker leaves its account's runs pending, all of one turn's together, and a run counts once however often it is enqueued or its end reported"
  "stalled-job-handed-out|src/redis/bullmq.runner.ts|      maxStalledCount: Number.MAX_SAFE_INTEGER,|      maxStalledCount: 1,|test/process/run-attempts.e2e-spec.ts|with maxRunAttempts 2, its job stalls twice|on BullMQ a job whose worker died is handed out again however often, so it ends in a worker that counts its run off its account's runs pending (BullMQ's default failed a job stalled twice unhandled, the lease recovery stored the run failed, and the account stayed one run short for 10 idle minutes)"
  "end-reported-before-complete|src/redis/bullmq.runner.ts|if (!delayed && accountId) await this.positions!.runEnded(|if (!delayed && accountId) void this.positions!.runEnded(|test/process/bullmq-end-report-crash.e2e-spec.ts|the next worker takes it off|on BullMQ a worker reports a run's end before BullMQ completes its job, so a worker killed at that report leaves the job to the next worker, which takes the run off its account's runs pending without running it again (it stayed counted for the account's next 10 idle minutes)"
  "end-report-retried|src/redis/account-queue-positions.ts|      for (const run of runs) void this.ends.push(run);|      for (const run of runs.slice(1)) void this.ends.push(run);|test/services/bullmq-fairness.e2e-spec.ts|is reported again once Redis answers|on BullMQ a run's end whose report Redis failed is sent again until Redis answers, so the run leaves its account's runs pending (it stayed counted for the account's next 10 idle minutes)"
  "claim-failure-kept-queued|src/runs/in-process.runner.ts|        failed(error);|        void failed;|test/e2e/run-start-failures.e2e-spec.ts|dispatches again a run whose claim met a database error|a run whose claim met a database error is dispatched again and runs without a restart (it stayed queued, charged, until the next start)"
  "runner-throw-after-accept|src/runs/dispatch-retries.ts|      this.later(run, (again) => runner.dispatch(again).then(() => this.forget(again.id)), error);|      throw error;|test/e2e/run-start-failures.e2e-spec.ts|answers 200 when the host's runner throws after the accept|a host's runner that throws after the accept: the caller gets 200 with its run's id, and the run starts once a dispatch takes (it got a 500 after the charge)"
  "listener-throw-escapes|src/events/invocation.events.ts|      this.listenerFailed(name, 'threw', error);|      throw error;|test/e2e/run-start-failures.e2e-spec.ts|when a host's listener of the queued and started events throws|a host's plain listener that throws on a run's event is logged, and the run goes on (it got a 500 after the charge, or a run stuck running)"
  "async-listener-unhandled|src/events/invocation.events.ts|      if (settled) settled.catch((error: unknown) => this.listenerFailed(name, 'failed', error));|      void settled;|test/e2e/run-start-failures.e2e-spec.ts|logs a host's async listener that rejects|a host's \`async\` listener that rejects is logged (it was an unhandled rejection, which ends a Node process by default)"
  "shutdown-keeps-alive|src/http/body-capture/answer-hook.ts|      for (const res of inFlight) closeAfter(res);|      void closeAfter;|test/e2e/lifecycle.e2e-spec.ts|closes the connection of a trigger answered once shutdown began|a stopping node closes the connection of each webhook answer in flight when shutdown began, so kept-alive callers do not hold its close (5 s on Express, 72 s on Fastify) and their retries reach another node"
  "shutdown-keeps-alive-new|src/http/body-capture/answer-hook.ts|    if (shutdown.isShuttingDown) closeAfter(res);|    if (shutdown.isShuttingDown) void closeAfter;|src/http/body-capture/answer-hook.spec.ts|closes the connection of every webhook answer from then on|a stopping node closes the connection of each webhook request that arrives once shutdown began; the host's other routes keep theirs"
  "client-gone-before-handler|src/http/client-gone.ts|  if (response.destroyed) onClose();|  void response.destroyed;|test/e2e/hostile-input.e2e-spec.ts|is held nothing for on the sync route|a client that left while the guards awaited is held nothing: no sync waiter, no event stream slot (once held for the whole wait, or until the run ended)"
  # --- the webhook routes: only the module's own paths; a body never read before the guards, nor on a GET ---
  "routes-suffix-match|src/http/webhook-routes.ts|return new RegExp(\`^/\${[...segments(prefix|return new RegExp(\`/\${[...segments(prefix|test/e2e/host-settings.e2e-spec.ts|under no global prefix keeps its body|the module recognises only its own routes' whole paths: a host's route whose path merely ends in \`/webhooks/:id/trigger\` keeps its body (it got \`@Body()\` undefined)"
  "prefix-exclude-ignored|src/http/body-capture/webhook-body-capture.ts|prefixOf(this.appConfig, routePath, RequestMethod[method])|this.appConfig.getGlobalPrefix()|test/e2e/host-settings.e2e-spec.ts|that excludes the webhook routes keeps its body|a route the global prefix's \`exclude\` keeps at the root is recognised there (its body read by the module), not under the prefix"
  "get-body-to-host-parser|src/http/body-capture/express.ts|    else if (webhook.ignoresBody) closeIfBodySent(req, res);|    else if (webhook.ignoresBody) return next();|test/e2e/hostile-input.e2e-spec.ts|on the sync route from the path and headers while a stray body is still to come|a body sent to a GET route (sync, status, events) is never read: 404/403/401 answered from the path and headers at once (Express's parser held them until the body was complete, or answered its own 400)"
  "get-body-kept-alive|src/http/body-capture/stray-body.ts|  if (sent && !res.headersSent)|  if (false && sent && !res.headersSent)|test/e2e/hostile-input.e2e-spec.ts|answers the status of a run with its key as without a stray body|a GET route's answer closes a connection that sent a body, so the client cannot keep it open by sending more"
  "wrong-method-host-404|src/http/webhook-routes.ts|? undefined : route.allow,|? undefined : undefined,|test/e2e/trigger-and-body.e2e-spec.ts|answers 405 with Allow, in the webhook error shape|a webhook path called with another method is 405 with \`Allow\` in the webhook error shape, before the key (it got Nest's 404 body)"
  # --- bodies and outputs, at their exact edge ---
  "body-declared-edge|src/http/body-capture/read-body.ts|if (declared > maxBytes)|if (declared > maxBytes + 1)|test/e2e/hostile-input.e2e-spec.ts|answers 413 at once for a declared Content-Length of maxBodyBytes + 1|a declared Content-Length one byte over \`maxBodyBytes\` is refused before a byte is read"
  "body-streamed-edge|src/http/body-capture/read-body.ts|if (size > maxBytes) return|if (size > maxBytes + 1) return|test/e2e/trigger-and-body.e2e-spec.ts|answers 413 for a chunked body one byte over maxBodyBytes|a body without a declared length is refused one byte over \`maxBodyBytes\`"
  "output-returned-edge|src/runs/invocation.executor.ts|if (bytes > this.options.maxOutputBytes) {|if (bytes > this.options.maxOutputBytes + 1) {|test/e2e/output-limits.e2e-spec.ts|stores returned outputs of exactly maxOutputBytes and fails a run one byte over|returned outputs: exactly \`maxOutputBytes\` is stored, one byte more fails the run"
  "output-emitted-edge|src/runs/run-outputs.ts|if (total > this.maxBytes) {|if (total > this.maxBytes + 1) {|test/e2e/emitted-outputs.e2e-spec.ts|exactly maxOutputBytes; one byte more fails the run|emitted outputs: exactly \`maxOutputBytes\` is stored, the output one byte over is not and fails the run"
  "emit-after-stop|src/runs/run-outputs.ts|this.signal.aborted) return Promise.resolve(false);|false) return Promise.resolve(false);|src/runs/invocation.executor.emit.spec.ts|ignores emit after the run ended|an output emitted once the run's signal fired (time limit, cancel) is refused and never stored"
  # --- callbacks: signing, verification, SSRF ---
  "sign-content|src/callbacks/standard-webhooks.ts|.update(\`\${msgId}.\${timestampSec}.\`, 'utf8')|.update(\`\${msgId}.\${timestampSec}\`, 'utf8')|src/callbacks/standard-webhooks.spec.ts|signs \"id.timestamp.body\" as the oracle does|callbacks are signed as Standard Webhooks says: id, timestamp and body"
  "sign-without-body|src/callbacks/standard-webhooks.ts|'utf8').update(body).digest()|'utf8').digest()|src/callbacks/standard-webhooks.spec.ts|accepts what the oracle signed and returns the parsed body|the body is part of what is signed and verified (as the reference library signs it)"
  "verify-any-signature|src/callbacks/standard-webhooks.ts|if (got.length === want.length && timingSafeEqual(got, want)) matched = true;|if (got.length === want.length) matched = true;|src/callbacks/standard-webhooks.spec.ts|refuses a tampered body, timestamp or id, and a wrong secret|verification refuses a changed body, timestamp or id, and another secret's signature"
  "verify-signature-prefix|src/callbacks/standard-webhooks.ts|timingSafeEqual(got, want)|timingSafeEqual(got.subarray(0, 4), want.subarray(0, 4))|src/callbacks/standard-webhooks.spec.ts|refuses a signature one byte away|verification compares the whole signature"
  "verify-tolerance-old|src/callbacks/standard-webhooks.ts|if (nowSec - sentSec > toleranceSec) {|if (nowSec - sentSec > toleranceSec + 1) {|src/callbacks/standard-webhooks.spec.ts|the tolerance exactly|a timestamp one second older than the tolerance is refused"
  "verify-tolerance-new|src/callbacks/standard-webhooks.ts|if (sentSec - nowSec > toleranceSec) {|if (sentSec - nowSec > toleranceSec + 1) {|src/callbacks/standard-webhooks.spec.ts|the tolerance exactly|a timestamp one second newer than the tolerance is refused"
  "dns-query-uncancelled|src/callbacks/callback-sender.ts|  signal.addEventListener('abort', cancel, { once: true });|  void cancel;|src/callbacks/callback-sender.spec.ts|gives up at once when the attempt is over|a callback host name whose DNS never answers is given up with its attempt (the system resolver held a pool thread of the process for as long as it retried)"
  "with-secret-unset-late|src/callbacks/webhook-signature.guard.ts|if (typeof source !== 'function') checkSecret(source);|if (typeof source === 'string') checkSecret(source);|test/e2e/callback-receivers.e2e-spec.ts|at once, when the guard is made (so at startup), naming the fix|\`WebhookSignatureGuard.withSecret()\` refuses a missing secret (undefined, empty, an unset one in a list) when the guard is made, at startup"
  "secret-function-undefined-typeerror|src/callbacks/standard-webhooks.ts|if (!iterable) throw new WebhookConfigurationError(CALLBACK_SECRET_MISSING);|if (!iterable && secrets === null) throw new WebhookConfigurationError(CALLBACK_SECRET_MISSING);|test/e2e/callback-receivers.e2e-spec.ts|answers a secret function that gives undefined as a setup error|a receiver's secret function that answers undefined is a setup error naming the missing secret (500 logged), never a TypeError"
  # --- signed requests (docs/security.md) ---
  "signed-replay|src/http/signed-requests.ts|if (!(await this.limits.rememberOnce(|if (false && !(await this.limits.rememberOnce(|test/e2e/signed-requests.e2e-spec.ts|refuses a replayed webhook-id|a signed request's webhook-id is accepted once per trigger: a replay gets 401"
  "signed-with-key|src/http/trigger-key.guard.ts|    if (signing !== 'instead-of-key') {\n      const presented|    if (signing === 'off') {\n      const presented|test/e2e/signed-requests.e2e-spec.ts|needs both: a signature without X-Key|with-key mode asks for X-Key as well as a valid signature"
  "signed-count-after-verify|src/http/trigger-key.guard.ts|    if (signing !== 'instead-of-key') await this.admit(failures, trigger);|    await this.admit(failures, trigger);|test/e2e/signed-requests.e2e-spec.ts|counts only verified requests|in instead-of-key mode a request is counted in the rate limits only once its signature verified"
  "signed-id-given-back|src/http/signed-requests.ts|if (spentId !== null) await this.limits.forget(spentId)|if (spentId === 'never') await this.limits.forget(spentId)|test/e2e/signed-requests.e2e-spec.ts|a run refused for credits (402) gives its webhook-id back|a signed request whose run is not accepted (402, 503) gives its webhook-id back, so the sender's retry with the same id is taken"
  "ssrf-private-range|src/callbacks/callback-address.ts|'172.16.0.0/12'|'172.16.0.0/13'|src/callbacks/callback-address.spec.ts|refusedAddressKind|every address of the private ranges is refused (172.16.0.0/12 whole)"
  "ssrf-metadata|src/callbacks/callback-address.ts|['169.254.0.0/16', 'fe80::/10']|['fe80::/10']|src/callbacks/callback-address.spec.ts|refusedAddressKind|link-local addresses (169.254.169.254, cloud metadata) are refused"
  "ssrf-mapped-ipv4|src/callbacks/callback-address.ts|if (v4 !== undefined) return refusedAddressKind(v4);|if (false) return refusedAddressKind(v4);|src/callbacks/callback-address.spec.ts|refusedAddressKind|an IPv6 address carrying an IPv4 one is judged by the IPv4 one"
  "ssrf-resolved-name|src/callbacks/callback-sender.ts|for (const { address } of addresses) {|for (const { address } of addresses.slice(0, 1)) {|src/callbacks/callback-sender.spec.ts|refuses the host when ANY address it resolves to is not public|a name is refused when ANY address it resolves to is not public"
  "ssrf-rebinding|src/callbacks/callback-sender.ts|if (hostname.toLowerCase() !== host) throw|if (false) throw|src/callbacks/callback-sender.spec.ts|refuses another host name, and addresses that are not public|the connection goes only to the addresses checked for the name (no second lookup)"
  # --- callbacks' deliveries: one sender at a time, each attempt recorded by the sender holding it ---
  "delivery-claim-lease-sql|src/persistence/sql/sql-callback.store.ts|AND (owner IS NULL OR lease_expires_at < ?) RETURNING|AND (owner IS NULL OR lease_expires_at <= ?) RETURNING|test/contracts/storage.spec.ts|claims a pending, due delivery once|a delivery is claimed by one sender at a time, again only once its lease ran out (SQLite, PostgreSQL)"
  "delivery-claim-lease-memory|src/persistence/memory/in-memory-callback.store.ts|d.leaseExpiresAt.getTime() < now.getTime()|d.leaseExpiresAt.getTime() <= now.getTime()|test/contracts/storage.spec.ts|claims a pending, due delivery once|a delivery is claimed by one sender at a time, again only once its lease ran out (in memory)"
  "delivery-attempt-owner-sql|src/persistence/sql/sql-callback.store.ts|WHERE id = ? AND owner = ? AND status = 'pending'|WHERE id = ? AND (owner = ? OR 1 = 1) AND status = 'pending'|test/contracts/storage.spec.ts|records an attempt for its owner only|only the sender holding a delivery records its attempt (SQLite, PostgreSQL)"
  # --- callbacks' bodies: an output event is bounded by one output (docs/callbacks.md) ---
  "output-callback-whole-list|src/runs/invocation.executor.ts|outputs: [output], output: { index } });|outputs: list.slice(0, index + 1), output: { index } });|test/e2e/callbacks.e2e-spec.ts|stores output deliveries that grow with the output count, not its square (500 emits)|an \`invocation.output\` delivery holds its one output and its index, never the outputs so far (N emits store N bodies of one output, not N²)"
  "output-callback-whole-list|src/runs/invocation.executor.ts|      async (output, index) => {|      async (output, index, list) => {|-|-|-"
  "output-callback-whole-list|src/runs/run-outputs.ts|return this.store(clean, index).then(|return this.store(clean, index, this.list).then(|-|-|-"
  # --- isolation between tenants ---
  "list-reads-whole-error|src/persistence/sql/sql-invocation.repository.ts|const BOUNDED_COLUMNS = ['inputs', 'outputs', 'error'] as const;|const BOUNDED_COLUMNS = ['inputs', 'outputs'] as const;|test/contracts/storage.spec.ts|leaves inputs and an error longer than their bounds out of a list|a history list never reads a long error (or long inputs) out of the database: cut in SQL, flagged"
  "error-message-uncut|src/runs/run-error.ts|if (message.length <= MAX_ERROR_MESSAGE_CHARS) return message;|return message;|test/e2e/history-bounds.e2e-spec.ts|stores a bot's 1 MB error message cut at MAX_ERROR_MESSAGE_CHARS|a bot's error message is stored cut at 4,096 characters"
  "stream-share-per-trigger|src/rate-limits/held-shares.ts|if (this.perTrigger.of(trigger.id) >= this.caps.perTrigger) throw|if (this.perTrigger.of(trigger.id) > this.caps.perTrigger) throw|test/e2e/run-event-stream.e2e-spec.ts|leaves other triggers' streams working while one key asks for 1,000|one trigger holds at most \`maxEventStreamsPerTrigger\` run event streams of a process (429 beyond)"
  "sync-waiters-unbounded|src/invocations/invocation.waiter.ts|release = this.shares.take(trigger);|release = () => undefined;|test/e2e/sync.e2e-spec.ts|refuses a trigger's next sync past its share|one trigger holds at most \`maxSyncWaitersPerTrigger\` waiting syncs of a process (429 beyond); another trigger's still wait"
  "sync-waiter-place-kept|src/invocations/invocation.waiter.ts|      release?.();|      void release;|src/invocations/invocation.waiter.spec.ts|holds a place only while it waits for an unfinished run|a sync gives its place back when its wait ends, however it ends"
  "callback-attempts-per-trigger-uncapped|src/lifecycle/callback-deliveries.ts|      this.triggerInFlight.of(delivery.triggerId) >= MAX_IN_FLIGHT_PER_TRIGGER|      this.triggerInFlight.of(delivery.triggerId) < 0|test/e2e/callbacks.e2e-spec.ts|holds a hanging receiver to its trigger's places|one trigger's callback has at most \`MAX_IN_FLIGHT_PER_TRIGGER\` (4) attempts in flight in a process: a receiver that hangs with many deliveries due never holds the places of other triggers' callbacks"
  "callback-attempts-per-account-uncapped|src/lifecycle/callback-deliveries.ts|this.accountInFlight.of(accountId) >= MAX_IN_FLIGHT_PER_ACCOUNT)|this.accountInFlight.of(accountId) < 0)|test/e2e/callbacks.e2e-spec.ts|holds an account's hanging receivers to its account's places|one account's callbacks have at most \`MAX_IN_FLIGHT_PER_ACCOUNT\` (8) attempts in flight in a process, over all its triggers: an account whose receivers hang never holds the places of other accounts' callbacks (nine of its triggers held all 32)"
  "callback-account-cap-one-account|src/lifecycle/callback-deliveries.ts|return this.registry.manyAccounts ? delivery.accountId : undefined;|return delivery.accountId;|test/e2e/callbacks.e2e-spec.ts|keeps every place for that account|an app whose bots are all of one account keeps all 32 callback places for it (the per-account cap, meant to keep room for other tenants, cut it to 8)"
  "callback-sweep-one-page|src/lifecycle/callback-deliveries.ts|      if (!full |      if (true |test/e2e/callbacks.e2e-spec.ts|lists past a busy trigger's backlog|a sweep lists again past a busy trigger's backlog once that trigger's places are taken, so its page never hides other triggers' due deliveries"
  "due-skip-ignored-sql|src/persistence/sql/sql-callback.store.ts|\`AND d.trigger_id NOT IN (|\`AND LOWER(d.trigger_id) NOT IN (|test/contracts/storage.spec.ts|none of the triggers it is told to skip|the due deliveries are listed without the triggers the sender skips (SQLite, PostgreSQL)"
  "due-skip-accounts-ignored-sql|src/persistence/sql/sql-callback.store.ts|(skipAccounts.length > 0 ?|(skipAccounts.length < 0 ?|test/contracts/storage.spec.ts|none of the accounts it is told to skip|the due deliveries are listed without the accounts the sender skips, each with its trigger's account (SQLite, PostgreSQL)"
  "query-param-list|src/http/query-text.ts|  if (value !== undefined && typeof value !== 'string') throw refuse(name);\n||test/e2e/hostile-input.e2e-spec.ts|answers events ?after=1&after=2 with 400|a query parameter given twice or as a list is a 400, never a 500"
  # --- retention ---
  "retention-unfinished|src/persistence/sql/sql-invocation.repository.ts|WHERE created_at < ? AND status IN (\${FINISHED})|WHERE created_at < ?|test/contracts/storage.spec.ts|deletes finished runs created before a date, never queued or running ones|retention deletes finished runs only"
  "retention-running|src/persistence/records.ts|INVOCATION_STATUSES.filter((s) => s !== 'queued' && s !== 'running')|INVOCATION_STATUSES.filter((s) => s !== 'queued')|test/contracts/storage.spec.ts|deletes finished runs created before a date, never queued or running ones|a running run is not finished: retention keeps it"
  "retention-age|src/lifecycle/history-retention.ts|new Date(now - this.options.historyRetentionDays * DAY_MS)|new Date(now)|src/lifecycle/history-retention.spec.ts|keeps runs younger than historyRetentionDays|retention deletes only runs older than \`historyRetentionDays\`"
  "audit-retention-age|src/lifecycle/history-retention.ts|new Date(now - days * DAY_MS)|new Date(now - (days - 1) * DAY_MS)|test/e2e/audit-log.e2e-spec.ts|deletes entries older than auditRetentionDays on the clock|retention deletes only audit log entries older than \`auditRetentionDays\`"
  # --- access: IP allow-lists, the audit log's principal ---
  "ip-allow-list-off|src/http/ip-allow-list.ts|  if (!allowedIps?.length) return;|  if (allowedIps) return;|test/e2e/ip-allow-list.e2e-spec.ts|lets every address in until a list is set, then only the listed ones|a trigger with an IP allow-list refuses every other address (403)"
  "audit-principal-lost|src/admin/audit/admin-audit.ts|principal: AuditContext.principal(),|principal: null,|test/e2e/audit-log.e2e-spec.ts|records each admin change and key view with the principal the host's guard set|an audit entry names the principal the host's guard put on the request"
  "delivery-retention-pending|src/persistence/sql/sql-callback.store.ts|status IN ('delivered', 'failed')|status IN ('delivered', 'failed', 'pending')|test/contracts/storage.spec.ts|deletes delivered and failed deliveries created before a date, never pending ones|retention never deletes a delivery still to be sent"
  # --- the host's settings (docs/configuration.md, "In your host") ---
  "sqlite-driver-hazard-silent|src/persistence/typeorm/webhook-data-source.ts|(major === 24 && minor >= 19)|(major === 24 && minor >= 99)|src/persistence/typeorm/webhook-data-source.spec.ts|warns on Node|at startup the module warns when it opens SQLite with better-sqlite3 before 13 on Node 24.19 or later (it can abort the process there)"
  "trigger-url-prefix-exclude|src/http/global-prefix.ts|const prefix = prefixOf(appConfig, route, method);|const prefix = appConfig.getGlobalPrefix();|test/e2e/host-settings.e2e-spec.ts|is where the route answers|the trigger URL the module hands out (admin service, admin API, screens) is where the route answers: without the global prefix when its \`exclude\` covers the webhook routes"
  # --- the module's set-up (README, docs/admin.md) ---
  "unfunded-answer-tells-setup|src/errors/webhook-trigger.messages.ts|credit(s)); nothing was run\`;|credit(s)); nothing was run. Its owner \${OPENS_IT}\`;|test/e2e/first-use.e2e-spec.ts|answers 402 saying the account was never opened (without naming it or the server set-up)|a caller's 402 for an account never funded says only that (no credits yet), never how the server is set up (that is the startup warning's)"
  "module-imported-twice|src/lifecycle/single-instance.ts|if (instances > 1) throw|if (instances > 2) throw|test/e2e/module-configuration.e2e-spec.ts|refuses a second import in a feature module at startup, naming the fix|a second \`forRoot()\` in one application stops startup naming the fix (one import; \`isGlobal: true\`), before any database opens"
  "testing-kit-not-a-bot|src/testing/webhook-trigger-testing.module.ts|      if (type && !Reflect.getMetadata(WEBHOOK_BOT_METADATA, type)) throw|      if (type && !type) throw|test/e2e/testing-kit.e2e-spec.ts|refuses a class in bots that is not a bot|the testing kit refuses a class in \`bots\` that is not a \`@WebhookBot\`, naming it and the fix (it was taken silently and its trigger never existed)"
  # --- observability (docs/observability.md) and the testing kit (docs/testing.md) ---
  "trace-run-span-parent|src/telemetry/run-tracing.ts|      links: request && api.trace.isSpanContextValid(request) ? [{ context: request }] : [],\n    },\n    parent,|      links: request && api.trace.isSpanContextValid(request) ? [{ context: request }] : [],\n    },\n    api.ROOT_CONTEXT,|test/e2e/tracing.e2e-spec.ts|continues the caller trace through the trigger, the run, the bot span|one trace id from the caller through the trigger, the run (on any node) and the bot's own spans"
  "requests-metric-wrong-method|src/http/webhook-routes.ts|operation: method === 'OPTIONS' ? undefined : route.operation,|operation: own ? route.operation : undefined,|test/e2e/metrics.e2e-spec.ts|a wrong method's 405, an undecodable id's 404|every answer of a webhook path counts in \`webhook_trigger_requests_total\` under the path's operation: a wrong method's 405, an undecodable id's 404, a HEAD (they went uncounted)"
  "metrics-account-opt-in|src/telemetry/webhook-metrics.ts|attributes = this.accountLabels ? { bot: run.botId, account: run.accountId } : { bot: run.botId };|attributes = { bot: run.botId, account: run.accountId };|test/e2e/metrics.e2e-spec.ts|every metric moves as runs do|run metrics carry an account label only when the host opts in (cardinality)"
  "health-backlog-at-bound|src/lifecycle/webhook-trigger-probes.ts|if (this.runBacklog.full(queued)) return|if (this.runBacklog.full(queued - 1)) return|test/e2e/health.e2e-spec.ts|is down naming backlog (503) while|the health indicator is down once the backlog reaches maxQueuedRuns"
  "overview-nearest-rank|src/persistence/sql/sql-run-overview.ts|rn = (95 * n + 99) / 100|rn = (95 * n + 99) / 100 - 1|test/contracts/storage.spec.ts|20 runs of 1 to 20 ms give p50 10 ms and p95 19 ms|the Overview's p95 is the nearest rank, the same on every storage"
  "testing-kit-close-at-once|src/testing/webhook-trigger-testing.module.ts|shutdownGraceMs: 0, ||test/e2e/testing-kit.e2e-spec.ts|closes at once with a run still going|closing the testing kit ends the runs still going at once, without a real grace"
  "testing-kit-runbot-signal|src/testing/run-bot.ts|await untilAborted(signal, () =>|await untilAborted(new AbortController().signal, () =>|test/e2e/testing-kit.e2e-spec.ts|ends once the signal fires, as a run does|runBot ends once its signal fires, as a run does, also when it fired before \`main()\` was called or \`main()\` ignores it (it waited for \`main()\` forever: docs/testing.md's own SlowBot hung a spec that aborted at once)"
  "testing-kit-runbot-aborted|src/testing/run-bot.ts|error: { message: messageOf(signal.reason), code: 'aborted' },|error: { message: messageOf(signal.reason) },|test/e2e/testing-kit.e2e-spec.ts|tells a stop by the spec's signal from the bot failing with the same words|\`runBot\`'s result says a stop came from the spec's signal (\`error.code\` \`'aborted'\`), apart from the bot failing on its own (it was \`failed\` with the reason's message only: a bot that threw the same words looked the same)"
  "testing-kit-idle-early|src/testing/webhook-trigger-harness.ts|    await this.moduleRef.get(InvocationExecutor, { strict: false }).idle();|    void this.moduleRef.get(InvocationExecutor, { strict: false }).idle();|test/e2e/testing-kit.e2e-spec.ts|keeps idle() waiting while a run waits on the clock|the kit's \`idle()\` resolves only once no run is in flight, a run waiting on the clock included, until the clock passes its wait (docs/testing.md, Time)"
  "testing-kit-own-app-port-held|src/testing/webhook-trigger-harness.ts|      server.unref();\n||test/e2e/testing-kit.e2e-spec.ts|lets Jest exit when a spec of your own app fails before app.close()|the port the harness opens for your app does not keep the runner alive: a spec that fails before its \`app.close()\` ends, Jest reports it and exits (it stayed alive for good: \"Jest did not exit\")"
  "testing-kit-failed-start-left-open|src/testing/create-harness.ts|    await app.close().catch(() => undefined);\n||test/e2e/testing-kit.e2e-spec.ts|closes what its app opened when the app fails to start|\`createWebhookTriggerHarness()\` closes its app again when it fails to start, so what your providers opened (a pool, a timer) does not keep the runner alive (it was left open)"
  "testing-kit-missing-provider-unexplained|src/testing/nest-testing.ts|    throw withProvidersFix(error, given, where);|    throw error;|test/e2e/testing-kit.e2e-spec.ts|keeps Nest's error for a bot whose dependency was not given|a bot whose dependency the kit was not given fails with Nest's own error and, under it, the kit's fix: the \`providers\` of \`createWebhookTriggerHarness()\` or \`runBot()\` (Nest's advice alone was to edit WebhookTriggerTestingModule, the kit's own module)"
  "testing-kit-imports-ignored|src/testing/webhook-trigger-testing.module.ts|callbackTransport: transport }), ...(config.imports ?? [])],|callbackTransport: transport })],|test/e2e/testing-kit.e2e-spec.ts|builds bots with the providers your own modules export|the harness and \`WebhookTriggerTestingModule\` build your bots with the providers your own modules export (\`imports\`; there was no way but to give each provider again in \`providers\`, a second copy)"
  "testing-kit-runbot-imports-ignored|src/testing/run-bot.ts|{ imports: options.imports, providers:|{ providers:|test/e2e/testing-kit.e2e-spec.ts|builds bots with the providers your own modules export|\`runBot()\` builds the bot with the providers your own modules export (\`imports\`)"
  "testing-kit-fake-timers-silent|src/testing/test-clock.ts|    if (fakeImmediate()) return|    if (fakeImmediate() && false) return|src/testing/test-clock.spec.ts|says what to do when Jest's fake timers are on|\`TestClock.tick()\` under Jest's or Vitest's fake timers is refused, saying what to do (it never settled: the spec timed out and its kit was left open, so Jest did not exit)"
  "testing-kit-verified-now|src/testing/webhook-trigger-harness.ts|{ now: sent.receivedAt }|{ now: this.clock.now() }|test/e2e/testing-kit.e2e-spec.ts|keeps a callback verified as it was when received|the kit's \`verified\` says whether a callback's signature held when it was received (it was judged at the time \`callbacks()\` was read: every attempt more than 5 minutes old turned \`false\` once the clock moved on, as in a test of the retry schedule)"
  "testing-kit-prefix-ignored|src/testing/webhook-trigger-harness.ts|servedPath(this.appConfig, |((_config: unknown, path: string, _method: unknown) => '/' + path)(this.appConfig, |test/e2e/testing-kit.e2e-spec.ts|drives an app of yours under its global prefix|the harness drives the module's routes where your app serves them, under its global prefix (it called them at the root: every request of an app with \`setGlobalPrefix()\` got Express's HTML 404 and failed as \`Unexpected token '<'\`)"
  "testing-kit-imports-nest-testing|src/testing/run-bot.ts|import { compileTestingModule } from './nest-testing.js';|import { compileTestingModule } from './nest-testing.js';\nimport '@nestjs/testing';|test/e2e/testing-kit.e2e-spec.ts|says to install @nestjs/testing when a harness is made without it|\`nestjs-webhook-triggers/testing\` imports without @nestjs/testing, and the harness and \`runBot()\` say to install it (runBot imported it at the top: the import failed with \`Cannot find module\`, never the kit's message)"
  "bot-clock-not-exported|src/webhook-trigger.module.ts|    Clock,\n  ],|  ],|test/e2e/testing-kit.e2e-spec.ts|lets a bot wait on the module's Clock it injects|a bot can inject the module's \`Clock\` and wait on it, so the testing kit's clock moves its waits (it could not be injected: a bot that polls or backs off waited in real time in a spec)"
  "testing-kit-unknown-bot|src/testing/webhook-trigger-harness.ts|      if (!known.includes(botId)) return|      if (false) return|test/e2e/testing-kit.e2e-spec.ts|names the bots it has, and the fix, when asked to trigger a bot it was not given|the harness asked to trigger a bot it was not given names the bots it has and the fix (\`bots\`, or a trigger of yours) (it only said the bot was not registered)"
  # --- layering: `npm run lint:deps` (docs/architecture.md), run by a unit spec ---
  "sql-class-outside-persistence|src/http/trigger-key.guard.ts|import type { TriggerRepository } from '../persistence/trigger.repository.js';|import type { SqlTriggerRepository as TriggerRepository } from '../persistence/sql/sql-trigger.repository.js';|src/dependency-rules.spec.ts|no module imports what its folder may not|nothing outside persistence/ names a SQL class, type-only imports included: it injects the contracts"
  "folder-cycle-type-only|src/options/defaults.ts|import type { ResolvedWebhookTriggerOptions } from './webhook-trigger-options.interface.js';|import type { ResolvedWebhookTriggerOptions } from './webhook-trigger-options.interface.js';\nimport type { TriggerRecord } from '../persistence/records.js';|src/dependency-rules.spec.ts|no folders of src/ form a cycle|folders of src/ form no cycle, type-only imports included (options/ never names persistence/)"
)

# --- the rows, grouped by name (in order of first appearance) ---------------------------------------------------
declare -a NAMES=()
declare -A ROWS_OF=() TEST_OF=() TITLE_OF=() PROMISE_OF=() FILES_OF=()
for i in "${!MUTATIONS[@]}"; do
  bars=${MUTATIONS[$i]//[^|]/}
  ((${#bars} == 6)) || { echo "row $i has ${#bars} '|' where 6 separate its 7 fields: no field may hold a '|'" >&2; exit 2; }
  IFS='|' read -r name file _from _to test title promise <<<"${MUTATIONS[$i]}"
  if [[ -z "${ROWS_OF[$name]+x}" ]]; then
    NAMES+=("$name")
    ROWS_OF[$name]=$i TEST_OF[$name]=$test TITLE_OF[$name]=$title PROMISE_OF[$name]=$promise FILES_OF[$name]=$file
  else
    [[ "$test" == "-" ]] || { echo "row $i ($name): only the first row of a mutation names its test" >&2; exit 2; }
    ROWS_OF[$name]+=" $i"
    [[ " ${FILES_OF[$name]} " == *" $file "* ]] || FILES_OF[$name]+=" $file"
  fi
done

# The table of CONTRIBUTING.md ("Mutation checks"), generated from the rows.
list() {
  echo '| mutation | the promise it breaks | where | the test that must fail |'
  echo '|---|---|---|---|'
  local name files
  for name in "${NAMES[@]}"; do
    files=$(printf '`%s` ' ${FILES_OF[$name]})
    printf '| `%s` | %s | %s| `%s`, "%s" |\n' "$name" "${PROMISE_OF[$name]}" "$files" "${TEST_OF[$name]}" "${TITLE_OF[$name]}"
  done
}

check_docs() {
  local docs="$root/CONTRIBUTING.md"
  if diff <(list) <(sed -n '/<!-- mutation-table:begin/,/<!-- mutation-table:end/p' "$docs" | sed '1d;$d') >/dev/null; then
    echo "CONTRIBUTING.md lists every mutation of this script (${#NAMES[@]})"
  else
    echo "CONTRIBUTING.md's mutation table is not this script's: replace it (between the mutation-table comments) with"
    echo "the output of: bash scripts/mutation-check.sh --list"
    diff <(list) <(sed -n '/<!-- mutation-table:begin/,/<!-- mutation-table:end/p' "$docs" | sed '1d;$d') || true
    return 1
  fi
}

case "${1:-}" in
  --list) list; exit 0 ;;
  --check-docs) check_docs; exit $? ;;
  -*) echo "usage: $0 [--list | --check-docs | name…]" >&2; exit 2 ;;
esac

: "${WEBHOOK_TEST_POSTGRES_URL:?set WEBHOOK_TEST_POSTGRES_URL (the PostgreSQL rows need it)}"
: "${WEBHOOK_TEST_REDIS_URL:?set WEBHOOK_TEST_REDIS_URL (the Redis rows need it)}"

wanted=("$@")
for w in "${wanted[@]}"; do
  [[ -n "${ROWS_OF[$w]+x}" ]] || { echo "no mutation named $w (see --list)" >&2; exit 2; }
done
docs_ok=0
if ((${#wanted[@]} == 0)); then
  wanted=("${NAMES[@]}")
  check_docs || docs_ok=1
fi

jobs=${MUTATION_JOBS:-2}
((jobs > ${#wanted[@]})) && jobs=${#wanted[@]}
# Longest one mutation's test may take before it counts as hung (an ERROR, not a catch).
row_timeout=${MUTATION_ROW_TIMEOUT:-5m}

work=$(mktemp -d "${TMPDIR:-/tmp}/mutation-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 143' TERM INT # so that the EXIT trap removes the scratch copies
mkdir -p "$work/results"
# One scratch copy of the working tree per lane: the files git knows (tracked and untracked, not ignored).
for ((lane = 0; lane < jobs; lane++)); do
  mkdir -p "$work/lane$lane"
  (cd "$root" && git ls-files -co --exclude-standard | grep -v -x 'node_modules' | tar -cf - -T -) | tar -xf - -C "$work/lane$lane"
  ln -s "$(readlink -f "$root/node_modules")" "$work/lane$lane/node_modules"
done

# Replaces the exact text once in a scratch copy ("\n" a line break); fails when it is not there exactly once.
apply() {
  FROM="$2" TO="$3" node -e '
    const fs = require("fs"); const file = process.argv[1];
    const un = (s) => s.replace(/\\n/g, "\n");
    const [from, to] = [un(process.env.FROM), un(process.env.TO)];
    const text = fs.readFileSync(file, "utf8"); const n = text.split(from).length - 1;
    if (n !== 1) { console.error(`expected the text once in ${file}, found it ${n} times: ${from}`); process.exit(1); }
    fs.writeFileSync(file, text.replace(from, () => to));' "$1"
}

# jest -t takes a regular expression: the test names are matched literally.
literal() { printf '%s' "$1" | sed 's/[][\\.*^$?+(){}|/]/\\&/g'; }

# Runs one mutation in a lane's scratch copy; prints one result line and writes it to results/<index>.
check() {
  local lane=$1 index=$2 name=$3 dir="$work/lane$1" started=$SECONDS status detail rc=0
  local log="$work/$name.log" test=${TEST_OF[$name]} title=${TITLE_OF[$name]} row file from to
  local applied=1 files=()
  for row in ${ROWS_OF[$name]}; do
    IFS='|' read -r _ file from to _ <<<"${MUTATIONS[$row]}"
    files+=("$file")
    apply "$dir/$file" "$from" "$to" 2>>"$log" || applied=0
  done
  if ((applied == 0)); then
    status=NOT-APPLIED detail=$(tail -1 "$log")
  else
    (cd "$dir" && CI=1 timeout -k 10s "$row_timeout" npx jest --runInBand --ci --forceExit "$test" -t "$(literal "$title")" >>"$log" 2>&1) || rc=$?
    local tests
    tests=$(grep -E '^Tests: ' "$log" | tail -1 || true)
    if ((rc == 124 || rc == 137)); then
      status=ERROR detail="its test did not finish within $row_timeout"
    elif [[ "$tests" =~ ([0-9]+)\ failed ]]; then
      status=caught detail=$(grep -E '✕' "$log" | head -2 | sed 's/^ *//' | tr '\n' ' ' || true)
    elif ((rc == 0)) && [[ "$tests" =~ ([0-9]+)\ passed ]]; then
      status=SURVIVED detail="$tests"
    else
      status=ERROR detail="jest exit $rc without a failing test: ${tests:-no test ran}"
    fi
  fi
  for file in "${files[@]}"; do cp "$root/$file" "$dir/$file"; done
  local line
  line=$(printf '%-11s %-30s %4ss  %s' "$status" "$name" "$((SECONDS - started))" "${detail:0:160}")
  echo "$line" | tee "$work/results/$(printf '%03d' "$index")"
  if [[ "$status" != caught ]]; then
    echo "   expected a failure of \"$title\" ($test); the end of its log:"
    tail -25 "$log" | sed 's/^/   | /'
  fi
}

echo "== ${#wanted[@]} mutation(s), $jobs at a time"
started=$SECONDS
for ((lane = 0; lane < jobs; lane++)); do
  (
    for i in "${!wanted[@]}"; do
      ((i % jobs == lane)) && check "$lane" "$i" "${wanted[$i]}"
    done
    true
  ) &
done
wait

echo
echo "== summary ($((SECONDS - started)) s for ${#wanted[@]} mutation(s), $jobs at a time)"
bad=0
for i in "${!wanted[@]}"; do
  f="$work/results/$(printf '%03d' "$i")"
  if [[ -f "$f" ]]; then
    cat "$f"
    [[ "$(cut -d' ' -f1 "$f")" == caught ]] || bad=$((bad + 1))
  else
    echo "ERROR       ${wanted[$i]}: no result"
    bad=$((bad + 1))
  fi
done
((docs_ok == 0)) || echo "and CONTRIBUTING.md's table is out of date (see above)"
if ((bad > 0 || docs_ok != 0)); then
  echo "FAILED: $bad of ${#wanted[@]} mutation(s) not caught"
  exit 1
fi
echo "all ${#wanted[@]} mutation(s) caught"
