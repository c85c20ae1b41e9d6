#!/usr/bin/env python3
"""Mines (question, code) pairs from documented source for contrastive fine-tuning of the embedder.

Usage: scripts/finetune/mine.py OUT.jsonl ROOT...

For each documented definition — a Python function or class (its docstring), a Rust `fn` (its `///`
lines), a JavaScript/TypeScript declaration (its `/** */` block), a Go `func` (its `//` lines) — the
question is the doc comment's first paragraph (markdown links and backticks removed, at most 300
characters) and the answer is the definition without its doc comment (at most 80 lines; a class's
first 60), headed by its path and name the way trove heads what it embeds. Tests, examples,
benches, vendored and minified code are skipped; pairs are de-duplicated. Each line of OUT:
{"query": ..., "doc": "ROOT_NAME/rel/path name\ncode"}. Standard library only.

The measurement that used it is in docs/retrieval-notebook.md (fine-tuning, tried and not kept).
"""
import ast, json, os, re, sys, hashlib

def first_par(doc):
    par = []
    for line in doc.strip().splitlines():
        l = line.strip()
        if not l:
            break
        if l.startswith(('#', '@', ':param', ':return', 'Args:', 'Returns:', '```', '>>>', '..')):
            break
        par.append(l)
    q = ' '.join(par)
    q = re.sub(r'\s+', ' ', q).strip()
    q = re.sub(r'\[`?([^\]`]+)`?\]\([^)]*\)', r'\1', q)  # markdown links
    q = q.replace('`', '')
    return q[:300]

def ok(q, code):
    return len(q) >= 20 and len(q.split()) >= 4 and len(code.strip()) >= 40

def py_pairs(path, rel, out):
    try:
        src = open(path, encoding='utf-8').read()
        tree = ast.parse(src)
    except Exception:
        return
    lines = src.splitlines(keepends=True)
    def visit(node, prefix):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                sp = prefix + [ch.name]
                doc = ast.get_docstring(ch)
                if doc and ch.body and isinstance(ch.body[0], ast.Expr):
                    d = ch.body[0]
                    start = (ch.decorator_list[0].lineno if ch.decorator_list else ch.lineno) - 1
                    end = ch.end_lineno
                    if isinstance(ch, ast.ClassDef):
                        end = min(end, start + 60)
                    code = ''.join(lines[start:d.lineno - 1] + lines[d.end_lineno:end])
                    q = first_par(doc)
                    if ok(q, code):
                        out.append((q, rel, ' > '.join(sp), code))
                visit(ch, sp)
    visit(tree, [])

def block_end(lines, k, n, cap=80):
    """The end (exclusive) of the braced block that starts at line k, at most cap lines."""
    depth, e, seen = 0, k, False
    while e < n and e < k + 400:
        depth += lines[e].count('{') - lines[e].count('}')
        if '{' in lines[e]: seen = True
        if seen and depth <= 0: break
        if not seen and lines[e].rstrip().endswith(';'): break
        e += 1
    return min(e + 1, k + cap)

DOC_FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+|async\s+|unsafe\s+|extern\s+"[^"]*"\s+)*fn\s+(\w+)')
def line_doc_pairs(path, rel, out, prefix, decl, name_group):
    """Rust and Go: a run of `prefix` comment lines, then attributes (`#[...]`), then a definition
    that `decl` matches; the definition's name is that match's group `name_group`."""
    try:
        lines = open(path, encoding='utf-8').read().splitlines(keepends=True)
    except Exception:
        return
    i, n = 0, len(lines)
    while i < n:
        if lines[i].lstrip().startswith(prefix):
            j = i
            doc = []
            while j < n and lines[j].lstrip().startswith(prefix):
                doc.append(lines[j].lstrip()[len(prefix):].strip()); j += 1
            k = j
            while k < n and lines[k].lstrip().startswith('#['):
                k += 1
            m = decl.match(lines[k]) if k < n else None
            if m:
                code = ''.join(lines[j:block_end(lines, k, n, cap=80 - (k - j))])
                q = first_par('\n'.join(doc))
                if ok(q, code):
                    out.append((q, rel, m.group(name_group), code))
            i = j
        else:
            i += 1

def rs_pairs(path, rel, out):
    line_doc_pairs(path, rel, out, '///', DOC_FN, 4)

JS_DECL = re.compile(r'^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\s*\*?\s*(\w+)|(?:static\s+|public\s+|private\s+|protected\s+|async\s+|get\s+|set\s+)*(\w+)\s*(?:<[^>]*>)?\s*\([^;]*$|(?:const|let|var)\s+(\w+)\s*=|(?:[\w$]+\.)+(\w+)\s*=\s*(?:async\s+)?function)')
def js_pairs(path, rel, out):
    try:
        src = open(path, encoding='utf-8').read()
    except Exception:
        return
    if '\n' not in src[:5000] and len(src) > 5000:
        return  # minified
    lines = src.splitlines(keepends=True)
    i, n = 0, len(lines)
    while i < n:
        if lines[i].lstrip().startswith('/**'):
            j = i; doc = []
            while j < n:
                l = lines[j].strip()
                doc.append(re.sub(r'^(/\*\*|\*/|\*)\s?', '', l).replace('*/', ''))
                j += 1
                if '*/' in l: break
            k = j
            while k < n and (not lines[k].strip() or lines[k].lstrip().startswith('@')):
                k += 1
            m = JS_DECL.match(lines[k]) if k < n else None
            if m and '{' in ''.join(lines[k:k+3]):
                name = next(g for g in m.groups() if g)
                e = block_end(lines, k, n)
                code = ''.join(lines[k:e])
                q = first_par('\n'.join(doc))
                if ok(q, code) and name not in ('if', 'for', 'while', 'switch', 'return', 'catch'):
                    out.append((q, rel, name, code))
            i = j
        else:
            i += 1

GO_FUNC = re.compile(r'^func\s+(?:\([^)]*\)\s*)?(\w+)')
def go_pairs(path, rel, out):
    line_doc_pairs(path, rel, out, '//', GO_FUNC, 1)

def main():
    if len(sys.argv) < 3:
        sys.exit('usage: mine.py OUT.jsonl ROOT...')
    outp = sys.argv[1]
    roots = sys.argv[2:]
    pairs = []
    for root in roots:
        base = os.path.basename(root.rstrip('/'))
        for dp, dns, fns in os.walk(root):
            dns[:] = [d for d in dns if d not in ('test', 'tests', 'idlelib', 'lib2to3', 'site-packages', 'benches', 'examples', '__pycache__', 'target', 'node_modules', 'dist', 'testdata', 'vendor', 'fp', 'esm', 'locale')]
            for f in fns:
                p = os.path.join(dp, f)
                rel = os.path.join(base, os.path.relpath(p, root))
                if f.endswith('.py'):
                    py_pairs(p, rel, pairs)
                elif f.endswith('.rs'):
                    rs_pairs(p, rel, pairs)
                elif f.endswith(('.js', '.mjs', '.cjs', '.ts', '.tsx')) and not f.endswith(('.d.ts', '.min.js')):
                    js_pairs(p, rel, pairs)
                elif f.endswith('.go') and not f.endswith('_test.go'):
                    go_pairs(p, rel, pairs)
    seen, n = set(), 0
    with open(outp, 'w') as o:
        for q, rel, sp, code in pairs:
            h = hashlib.sha1((q + '\0' + code).encode()).hexdigest()
            if h in seen: continue
            seen.add(h); n += 1
            o.write(json.dumps({'query': q, 'doc': f'{rel} {sp}\n{code}'}) + '\n')
    print(n, 'pairs', file=sys.stderr)
if __name__ == '__main__':
    main()
