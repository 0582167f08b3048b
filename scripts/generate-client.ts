/**
 * `npm run client:generate`: regenerates clients/typescript/src/schema.d.ts from the API's
 * /openapi.json, served by the real app on a throw-away test stack (as `npm test` starts it).
 *
 *   --from <url>  read /openapi.json from a running API instead (e.g. http://localhost:3000)
 *   --check       write nothing; exit 1 when the committed file differs (used by the test suite)
 */
import fs from 'node:fs';
import path from 'node:path';
import globalSetup from '../test/setup/globalSetup';
import globalTeardown from '../test/setup/globalTeardown';
import { startTestApi } from '../test/helpers/stack';
import { CLIENT_SCHEMA_PATH, renderClientSchema } from './clientSchema';

async function fromRunningApi(baseUrl: string): Promise<object> {
  const res = await fetch(new URL('/openapi.json', baseUrl));
  if (!res.ok) throw new Error(`GET ${baseUrl}/openapi.json: ${res.status}`);
  return (await res.json()) as object;
}

async function fromTestStack(): Promise<object> {
  await globalSetup();
  try {
    const api = await startTestApi();
    try {
      return await fromRunningApi(api.baseUrl);
    } finally {
      await api.close();
    }
  } finally {
    await globalTeardown();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const from = args.includes('--from') ? args[args.indexOf('--from') + 1] : undefined;
  const document = from ? await fromRunningApi(from) : await fromTestStack();
  const rendered = await renderClientSchema(document);
  const file = path.resolve(__dirname, '..', CLIENT_SCHEMA_PATH);
  if (args.includes('--check')) {
    if (fs.readFileSync(file, 'utf8') !== rendered) {
      process.stderr.write(`${CLIENT_SCHEMA_PATH} is stale: the API changed. Run \`npm run client:generate\`.\n`);
      process.exit(1);
    }
    process.stdout.write(`${CLIENT_SCHEMA_PATH} is current\n`);
    return;
  }
  fs.writeFileSync(file, rendered);
  process.stdout.write(`wrote ${CLIENT_SCHEMA_PATH}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`client:generate failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
