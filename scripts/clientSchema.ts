import openapiTS, { astToString } from 'openapi-typescript';

/** Where the typed client's generated types live (committed; test/integration/typescriptClient.test.ts checks them). */
export const CLIENT_SCHEMA_PATH = 'clients/typescript/src/schema.d.ts';

const HEADER = `/**
 * Generated from the API's /openapi.json by openapi-typescript (npm run client:generate).
 * Do not edit: regenerate. \`npm test\` fails when this file no longer matches the API.
 */

`;

/** The client's types for an OpenAPI document (the API's /openapi.json). */
export async function renderClientSchema(document: object): Promise<string> {
  const ast = await openapiTS(document as Parameters<typeof openapiTS>[0], { alphabetize: true });
  return HEADER + astToString(ast);
}
