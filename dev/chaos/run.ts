import fs from 'node:fs';
import path from 'node:path';
import { runChaos } from './chaos';
import { formatReport, violations } from './report';
import { ROOT } from '../stack/stackParts';

/**
 * `npm run chaos`: a bounded chaos run against its own `npm run cluster` (CHAOS_DURATION_S,
 * default 300; subscriptions on processing and 3-D Secure cards are part of the load unless
 * CHAOS_LIFECYCLE_SUBSCRIPTIONS=0). Prints the table, keeps the full report in bench/.out/, exits 1 on any
 * violation or 500.
 */
async function main(): Promise<void> {
  const durationS = Number(process.env.CHAOS_DURATION_S ?? 300);
  if (!Number.isInteger(durationS) || durationS < 20) {
    process.stderr.write('CHAOS_DURATION_S must be a whole number of seconds, at least 20.\n');
    process.exit(78);
  }
  const report = await runChaos({
    durationS,
    // Subscriptions on tok_processing / tok_3ds_offsession too (decision 0028's amendment).
    lifecycleSubscriptions: process.env.CHAOS_LIFECYCLE_SUBSCRIPTIONS !== '0',
    log: (line) => process.stdout.write(`${line}\n`),
  });
  const text = formatReport(report);
  process.stdout.write(`\n${text}\n`);
  const outDir = path.join(ROOT, 'bench', '.out');
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `chaos-${report.startedAt.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify({ ...report, answers: undefined, text }, null, 2));
  process.stdout.write(`Report: ${file}\n`);
  process.exit(violations(report) === 0 ? 0 : 1);
}

main().catch((err: unknown) => {
  process.stderr.write(`chaos failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
