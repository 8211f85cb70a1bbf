'use strict';
// Turns a cell into a script for vm.Script, as E2B's JavaScript kernel
// (ijavascript with its Babel plugins) does:
// - TypeScript: types stripped by TypeScript's transpileModule (no checking);
// - `import ... from 'm'` at the top level: `await import('m')` into the names;
// - a top-level `await` (an import brings one): the cell runs in an async
//   function; its top-level declarations are hoisted to the script (var stays
//   var; let, const and class become let; functions become var) so the names
//   persist into later cells, and the last expression statement is returned;
// - `import('m')` anywhere: the driver's resolver (from the context's cwd).
// A cell acorn cannot parse goes to V8 unchanged, for V8's own SyntaxError.

const IMPORT_FN = '__cellvm_import';

let acorn = null;
let typescript = null;

// Debian installs both as /usr/share/nodejs packages; Debian's node finds them
// by name, other builds (the host's, in dev mode) by path.
function load(name) {
  try {
    return require(name);
  } catch (e) {
    return require('/usr/share/nodejs/' + name);
  }
}

function parser() {
  if (acorn === null) acorn = load('acorn');
  return acorn;
}

function tsCompiler() {
  if (typescript === null) typescript = load('typescript');
  return typescript;
}

// TypeScript's syntax errors (it reports no type errors here) as a SyntaxError
// with V8's layout: "file:line", the line, then the message.
function syntaxError(ts, code, d) {
  const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
  const err = new SyntaxError(message);
  const pos = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
  const line = pos ? code.split('\n')[pos.line] : '';
  const where = pos ? `evalmachine.<anonymous>:${pos.line + 1}\n${line}\n${' '.repeat(pos.character)}^\n\n` : '';
  err.stack = `${where}SyntaxError: ${message}`;
  return err;
}

function stripTypes(code) {
  const ts = tsCompiler();
  const result = ts.transpileModule(code, {
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      // Value imports stay even when unused, as they are in JavaScript.
      isolatedModules: true,
      preserveValueImports: true,
      removeComments: false,
      sourceMap: false,
    },
  });
  const errors = (result.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length) throw syntaxError(ts, code, errors[0]);
  const out = result.outputText;
  // Added to files without imports or exports (a module marker): not a script's.
  return out.replace(/\n?export \{\};\s*$/, '\n');
}

// Calls fn on each child node of `node`.
function children(node, fn) {
  for (const key of Object.keys(node)) {
    const v = node[key];
    if (v === null || typeof v !== 'object' || key === 'loc') continue;
    if (Array.isArray(v)) {
      for (const x of v) if (x && typeof x.type === 'string') fn(x);
    } else if (typeof v.type === 'string') {
      fn(v);
    }
  }
}

const FUNCTION_TYPES = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

// Marks top-level awaits and collects import() keywords to rewrite.
function scan(node, inFunction, found) {
  if (node.type === 'AwaitExpression' && !inFunction) found.topAwait = true;
  if (node.type === 'ForOfStatement' && node.await && !inFunction) found.topAwait = true;
  if (node.type === 'ImportExpression') found.edits.push({ start: node.start, end: node.start + 6, text: IMPORT_FN });
  const fn = inFunction || FUNCTION_TYPES.has(node.type);
  children(node, (c) => scan(c, fn, found));
}

function patternNames(p, out) {
  if (!p) return out;
  switch (p.type) {
    case 'Identifier':
      out.push(p.name);
      break;
    case 'ObjectPattern':
      for (const prop of p.properties) patternNames(prop.type === 'RestElement' ? prop.argument : prop.value, out);
      break;
    case 'ArrayPattern':
      for (const el of p.elements) patternNames(el, out);
      break;
    case 'RestElement':
      patternNames(p.argument, out);
      break;
    case 'AssignmentPattern':
      patternNames(p.left, out);
      break;
    default:
      break;
  }
  return out;
}

function keyText(node) {
  return node.type === 'Identifier' ? node.name : JSON.stringify(node.value);
}

// Returns {code, async}: the script to run and whether its value is a promise
// of the cell's value.
function parse(code) {
  return parser().parse(code, {
    ecmaVersion: 'latest',
    sourceType: 'script',
    allowAwaitOutsideFunction: true,
    allowImportExportEverywhere: true,
    allowHashBang: true,
  });
}

// A TypeScript cell that is no valid TypeScript throws TypeScript's SyntaxError.
function prepare(source, language) {
  let code = language === 'typescript' ? stripTypes(source) : source;
  let ast;
  try {
    ast = parse(code);
  } catch (e) {
    if (language === 'typescript') return { code, async: false };
    // A JavaScript cell with TypeScript's syntax (types, interfaces) runs as
    // TypeScript, as in E2B's kernel; anything else is V8's to report.
    try {
      code = stripTypes(source);
      ast = parse(code);
    } catch (e2) {
      return { code: source, async: false };
    }
  }
  const found = { topAwait: false, edits: [] };
  scan(ast, false, found);
  const edits = found.edits.sort((a, b) => a.start - b.start);
  const render = (s, e) => {
    let out = '';
    let pos = s;
    for (const ed of edits) {
      if (ed.start >= s && ed.end <= e) {
        out += code.slice(pos, ed.start) + ed.text;
        pos = ed.end;
      }
    }
    return out + code.slice(pos, e);
  };
  const src = (n) => render(n.start, n.end);
  const body = ast.body;
  const hasImport = body.some((s) => s.type === 'ImportDeclaration');
  if (!found.topAwait && !hasImport) return { code: render(0, code.length), async: false };

  // The async form: declarations hoisted to the script, the body in an async arrow.
  const hoistVar = [];
  const hoistLet = [];
  let prologue = '';
  let out = '';
  let pos = 0;
  body.forEach((stmt, i) => {
    out += code.slice(pos, stmt.start);
    pos = stmt.end;
    const last = i === body.length - 1;
    switch (stmt.type) {
      case 'ImportDeclaration': {
        const from = `await ${IMPORT_FN}(${stmt.source.raw})`;
        const specs = stmt.specifiers;
        const ns = specs.find((s) => s.type === 'ImportNamespaceSpecifier');
        const def = specs.find((s) => s.type === 'ImportDefaultSpecifier');
        const named = specs.filter((s) => s.type === 'ImportSpecifier');
        for (const s of specs) hoistLet.push(s.local.name);
        if (specs.length === 0) {
          out += from + ';';
        } else if (ns) {
          out += `${ns.local.name} = ${from};`;
          if (def) out += ` ${def.local.name} = ${ns.local.name}.default;`;
          for (const s of named) out += ` ${s.local.name} = ${ns.local.name}[${JSON.stringify(keyText(s.imported))}];`;
        } else {
          const props = [];
          if (def) props.push(`default: ${def.local.name}`);
          for (const s of named) props.push(`${JSON.stringify(keyText(s.imported))}: ${s.local.name}`);
          out += `({${props.join(', ')}} = ${from});`;
        }
        return;
      }
      case 'VariableDeclaration': {
        const names = [];
        for (const d of stmt.declarations) patternNames(d.id, names);
        (stmt.kind === 'var' ? hoistVar : hoistLet).push(...names);
        const parts = stmt.declarations
          .filter((d) => d.init || stmt.kind !== 'var')
          .map((d) => `(${src(d.id)} = ${d.init ? src(d.init) : 'undefined'})`);
        out += parts.length ? parts.join(', ') + ';' : ';';
        return;
      }
      case 'FunctionDeclaration':
        hoistVar.push(stmt.id.name);
        prologue += `${stmt.id.name} = ${src(stmt)};`;
        out += ';';
        return;
      case 'ClassDeclaration':
        hoistLet.push(stmt.id.name);
        out += `${stmt.id.name} = ${src(stmt)};`;
        return;
      case 'ExpressionStatement':
        if (last) {
          out += `return (${src(stmt.expression)});`;
          return;
        }
        break;
      default:
        break;
    }
    out += src(stmt);
  });
  out += code.slice(pos);
  // All on the first line, so the cell's own lines keep their numbers.
  const head =
    (hoistVar.length ? `var ${[...new Set(hoistVar)].join(', ')}; ` : '') +
    (hoistLet.length ? `let ${[...new Set(hoistLet)].join(', ')}; ` : '');
  return { code: `${head}(async () => {${prologue}${out}\n})()`, async: true };
}

// Loads what `language` will need, ahead of its first cell (TypeScript's
// compiler is 11 MB of JavaScript to compile).
function warm(language) {
  parser();
  if (language === 'typescript') tsCompiler();
}

module.exports = { prepare, warm, IMPORT_FN };
