// A Jest reporter that ends every run with what did not run and why: each suite (test file) with a
// `NOT RUN: <reason>` todo (a service such as PostgreSQL, Redis or Chromium is missing here), grouped by
// reason, so a newcomer does not read "70 passed" as "all passed". In CI nothing may be left out: the
// suites fail there instead of leaving a todo (test/helpers/services.ts).
const { relative } = require('node:path');

class NotRunReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const byReason = new Map();
    for (const file of results.testResults) {
      for (const test of file.testResults) {
        if (test.status !== 'todo') continue;
        const match = /NOT RUN:?\s*(.*)$/.exec(test.title);
        if (!match) continue;
        const reason = match[1] || 'see the suite';
        const files = byReason.get(reason) ?? new Set();
        files.add(relative(this.rootDir, file.testFilePath));
        byReason.set(reason, files);
      }
    }
    let text;
    if (byReason.size === 0) {
      text = `\nEvery selected suite ran (${results.numTotalTestSuites} suites).\n`;
    } else {
      const count = [...byReason.values()].reduce((n, files) => n + files.size, 0);
      text = `\nNOT RUN here: ${count} suite(s) left out, so the totals above do not cover them:\n`;
      for (const [reason, files] of byReason) text += `  - ${reason}\n      ${[...files].sort().join('\n      ')}\n`;
    }
    // After Jest's own summary (printed after every reporter's onRunComplete), so this is the last word.
    process.once('exit', () => process.stderr.write(text));
  }
}

module.exports = NotRunReporter;
