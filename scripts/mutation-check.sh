#!/usr/bin/env bash
# Mutation checks (CONTRIBUTING.md, "Mutation checks"): each mutation below breaks one guarantee on purpose,
# in a scratch copy of the working tree (never in the tree itself), and the test named for it must FAIL
# there. Exits non-zero when a mutation is not applied (the code moved: update this script) or survives
# (no test failed: a guarantee is untested). Needs PostgreSQL and Redis like the service suites:
#   WEBHOOK_TEST_POSTGRES_URL=postgres://… WEBHOOK_TEST_REDIS_URL=redis://… bash scripts/mutation-check.sh [name…]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
: "${WEBHOOK_TEST_POSTGRES_URL:?set WEBHOOK_TEST_POSTGRES_URL (the owner check on PostgreSQL and the lock renewal need it)}"
: "${WEBHOOK_TEST_REDIS_URL:?set WEBHOOK_TEST_REDIS_URL}"

# name | file | exact text | its replacement | test file | test name (jest -t)
MUTATIONS=(
  "lock-renewal|src/redis/bullmq.runner.ts|      stalledInterval: this.options.runLeaseMs,|      stalledInterval: this.options.runLeaseMs, skipLockRenewal: true,|test/services/bullmq-runner.e2e-spec.ts|a slow worker is not taken for a dead one"
  "owner-on-finish-sql|src/persistence/sql/sql-invocation.repository.ts|const owner = condition.owner === undefined ? '' : ' AND owner = ?';|const owner = '';|test/fakes/contract.spec.ts|finishes a running run only for its owner"
  "owner-on-finish-sql-args|src/persistence/sql/sql-invocation.repository.ts|, ...(condition.owner === undefined ? [] : [condition.owner])]|]|-|-"
  "owner-on-finish-postgres|src/persistence/sql/postgres-run-writes.ts|AND i.owner = v.owner |       |test/services/postgres-group-commit.e2e-spec.ts|outcomes stored together are one statement, each only by its run's owner"
)
# owner-on-finish-sql-args is the second half of owner-on-finish-sql (the owner's bound value goes with its
# condition); it is applied with it, never alone.

scratch=$(mktemp -d "${TMPDIR:-/tmp}/mutation-check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$root" && git ls-files -co --exclude-standard | grep -v -x 'node_modules' | tar -cf - -T -) | tar -xf - -C "$scratch"
ln -s "$(readlink -f "$root/node_modules")" "$scratch/node_modules"

# Replaces the exact text once in the scratch copy; fails when it is not there exactly once.
apply() {
  FROM="$2" TO="$3" node -e '
    const fs = require("fs"); const file = process.argv[1];
    const text = fs.readFileSync(file, "utf8"); const n = text.split(process.env.FROM).length - 1;
    if (n !== 1) { console.error(`expected the text once in ${file}, found it ${n} times: ${process.env.FROM}`); process.exit(1); }
    fs.writeFileSync(file, text.replace(process.env.FROM, () => process.env.TO));' "$scratch/$1"
}

restore() { cp "$root/$1" "$scratch/$1"; }

wanted=("$@")
survived=0
for m in "${MUTATIONS[@]}"; do
  IFS='|' read -r name file from to test title <<<"$m"
  [[ "$test" == "-" ]] && continue
  if ((${#wanted[@]} > 0)) && [[ ! " ${wanted[*]} " == *" $name "* ]]; then continue; fi
  apply "$file" "$from" "$to"
  if [[ "$name" == "owner-on-finish-sql" ]]; then
    IFS='|' read -r _ f2 from2 to2 _ _ <<<"${MUTATIONS[2]}"
    apply "$f2" "$from2" "$to2"
  fi
  echo "== $name: $file; expecting a failure of \"$title\" ($test)"
  log="$scratch/$name.log"
  if (cd "$scratch" && CI=1 npx jest --runInBand "$test" -t "$title" >"$log" 2>&1); then
    echo "   SURVIVED: no test failed"
    survived=1
  elif grep -Eq 'Tests: +[0-9]+ failed' "$log"; then
    echo "   caught: $(grep -E '✕' "$log" | head -3 | sed 's/^ *//' | tr '\n' ' ')"
  else
    echo "   ERROR: jest failed without a failing test (see below)"
    tail -30 "$log"
    survived=1
  fi
  restore "$file"
done
exit "$survived"
