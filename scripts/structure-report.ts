/**
 * `npm run structure [-- <root>]`: the numbers a structural change is judged by, for the tree at
 * <root> (default: this checkout): files and lines of TypeScript by folder, the largest functions,
 * and the import circles dependency-cruiser finds (type-only imports included).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
const PRODUCT = ['src', 'activities', 'workflows'];
const ALL = [...PRODUCT, 'dev', 'test', 'bench', 'scripts', 'clients'];

function tsFiles(dir: string): string[] {
  const full = path.join(root, dir);
  if (!fs.existsSync(full)) return [];
  const out: string[] = [];
  for (const entry of fs.readdirSync(full, { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!['node_modules', 'replay', '.out', 'fixtures'].includes(entry.name)) out.push(...tsFiles(rel));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

const lineCount = (file: string) => fs.readFileSync(path.join(root, file), 'utf8').split('\n').length - 1;

/** Folders two levels deep (src/api, workflows/subscription, ...), files and lines each. */
function linesByFolder(): Array<{ folder: string; files: number; lines: number }> {
  const rows = new Map<string, { files: number; lines: number }>();
  for (const top of ALL) {
    for (const file of tsFiles(top)) {
      const parts = file.split(path.sep);
      const folder = parts.length > 2 ? parts.slice(0, 2).join('/') : parts[0]!;
      const row = rows.get(folder) ?? { files: 0, lines: 0 };
      row.files += 1;
      row.lines += lineCount(file);
      rows.set(folder, row);
    }
  }
  return [...rows].map(([folder, row]) => ({ folder, ...row })).sort((a, b) => a.folder.localeCompare(b.folder));
}

/** Every function-like node of the product with its length in lines, longest first. */
function largestFunctions(limit: number): Array<{ name: string; lines: number }> {
  const found: Array<{ name: string; lines: number }> = [];
  for (const file of PRODUCT.flatMap(tsFiles)) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node, owner: string) => {
      let name = owner;
      if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isFunctionExpression(node)) {
        name = node.name ? node.name.getText(source) : owner;
      } else if (ts.isArrowFunction(node) && ts.isVariableDeclaration(node.parent)) {
        name = node.parent.name.getText(source);
      } else if (ts.isArrowFunction(node) && ts.isPropertyAssignment(node.parent)) {
        name = node.parent.name.getText(source);
      }
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        found.push({ name: `${file}: ${name}`, lines: end - start + 1 });
      }
      ts.forEachChild(node, (child) => visit(child, name));
    };
    visit(source, '(module)');
  }
  return found.sort((a, b) => b.lines - a.lines).slice(0, limit);
}

/** Import circles among the product's modules (dependency-cruiser, type-only imports included). */
function cycles(): { modules: number; cycles: number } {
  const bin = path.join(__dirname, '..', 'node_modules', '.bin', 'depcruise');
  const config = path.join(__dirname, '..', '.dependency-cruiser.cjs');
  let json: string;
  try {
    json = execFileSync(bin, [...PRODUCT, '--config', config, '--output-type', 'json'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    json = (err as { stdout: string }).stdout; // violations exit non-zero; the report is still on stdout
  }
  const result = JSON.parse(json) as {
    summary: { violations: Array<{ rule: { name: string }; from: string }> };
    modules: Array<{ source: string; dependencies: Array<{ circular: boolean }> }>;
  };
  const inCycles = new Set(result.modules.filter((m) => m.dependencies.some((d) => d.circular)).map((m) => m.source));
  return {
    modules: inCycles.size,
    cycles: result.summary.violations.filter((v) => v.rule.name === 'no-circular').length,
  };
}

const folders = linesByFolder();
const total = (tops: string[]) =>
  folders
    .filter((row) => tops.includes(row.folder.split('/')[0]!))
    .reduce((sum, row) => ({ files: sum.files + row.files, lines: sum.lines + row.lines }), { files: 0, lines: 0 });
const product = total(PRODUCT);
console.log(`Tree: ${root}`);
console.log(`Product (src, activities, workflows): ${product.files} files, ${product.lines} lines`);
console.log('\n| folder | files | lines |\n| --- | ---: | ---: |');
for (const row of folders) console.log(`| ${row.folder} | ${row.files} | ${row.lines} |`);
console.log('\nLargest functions of the product:');
for (const fn of largestFunctions(12)) console.log(`  ${String(fn.lines).padStart(4)}  ${fn.name}`);
const circles = cycles();
console.log(`\nImport circles: ${circles.cycles} (modules in a circle: ${circles.modules})`);
