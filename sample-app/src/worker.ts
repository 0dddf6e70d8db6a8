// First: the OpenTelemetry SDK (traces from the bots this worker runs), before main.js builds the app.
import './telemetry.js';

// `npm run start:worker`: the sample app as a worker-only process (WEBHOOK_ROLE=worker). It needs
// DATABASE_URL, REDIS_URL and WEBHOOK_KEY_SECRET, the same values as the API processes.
if (process.env.WEBHOOK_ROLE !== undefined && process.env.WEBHOOK_ROLE.trim() !== '' && process.env.WEBHOOK_ROLE.trim() !== 'worker') {
  process.stderr.write(
    `Invalid configuration: npm run start:worker starts a worker, but WEBHOOK_ROLE is ${JSON.stringify(process.env.WEBHOOK_ROLE)}\n`,
  );
  process.exit(1);
}
process.env.WEBHOOK_ROLE = 'worker';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- main.js must load after WEBHOOK_ROLE is set, which a hoisted import would not allow
require('./main.js');
