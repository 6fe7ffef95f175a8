#!/usr/bin/env python3
"""Holds the editor syntax files in tools/editor/ to the language they highlight.

Usage: check_syntax.py [--root REPO]   (default: the checkout this script is in)

Prints one line per problem and exits 1 if there is any:
- a syntax file differs from what tools/editor/generate.py writes now (it is stale or was edited
  by hand);
- a keyword of frontend/Brevis.g4, or a name of lang/Encodings.def, lang/MapFns.def or
  lang/DTypes.def (or a scan operator, or `auto`), is missing from a syntax file or highlighted
  as something else;
- brevis.tmLanguage.json is not valid JSON, one of its regexes does not compile with Python's re
  (they are kept to what Oniguruma and Python read alike), or an include names no rule;
- tokenizing the programs under test/lit with the TextMate grammar leaves a non-blank character
  without a scope, or marks one invalid outside test/lit/errors/syntax/ (where bad tokens are
  the point of the test).

The names are read here independently of generate.py, so that a mistake in how the generator
reads the definitions does not hide itself.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

DEFAULT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EDITOR = os.path.join("tools", "editor")
GRAMMAR = os.path.join(EDITOR, "brevis.tmLanguage.json")
VIM = os.path.join(EDITOR, "bdsl.vim")
# Lexically broken programs: invalid scopes are expected there.
INVALID_ALLOWED = os.path.join("test", "lit", "errors", "syntax") + os.sep

problems = []


def problem(message):
    problems.append(message)


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


# --- the language's names ------------------------------------------------------------------


def g4_literals(grammar):
    """Lexer rules whose whole body is one quoted literal, split into keywords and punctuation."""
    literals = re.findall(r"^[A-Z][A-Z0-9_]*\s*:\s*'([^']*)'\s*;", grammar, re.M)
    # Keywords are words (xxh64 has digits); the rest are punctuation.
    keywords = [t for t in literals if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", t)]
    return keywords, [t for t in literals if t not in keywords]


def def_strings(text, macro, index):
    """The index-th quoted argument of each `macro(...)` entry of a .def file."""
    names = []
    for args in re.findall(r"^\s*%s\((.*)\)\s*$" % macro, text, re.M):
        quoted = re.findall(r'"([^"]*)"', args)
        if len(quoted) > index:
            names.append(quoted[index])
    return names


def language(root):
    keywords, punctuation = g4_literals(read(root, "frontend/Brevis.g4"))
    names = {
        "keyword": keywords,
        "encoding": def_strings(read(root, "lang/Encodings.def"), "BREVIS_ENCODING", 0),
        "map function": def_strings(read(root, "lang/MapFns.def"), "BREVIS_MAPFN", 0),
        # The second quoted name is the one programs use (bf16, not BF16).
        "dtype": def_strings(read(root, "lang/DTypes.def"), "BREVIS_DTYPE", 1),
    }
    scan = re.search(r"scanOpFromName\([^)]*\)\s*\{(.*?)\n\}", read(root, "lang/Ast.cpp"), re.S)
    names["scan operator"] = re.findall(r'==\s*"(\w+)"', scan.group(1)) if scan else []
    auto = re.search(r'kAutoEncodingName\s*=\s*"(\w+)"', read(root, "lang/Encoding.h"))
    names["encoding"] += [auto.group(1)] if auto else []
    for kind, found in names.items():
        if not found:
            problem("found no %s names in the language definitions; check_syntax.py reads them wrongly" % kind)
    return names, punctuation


# --- generated files -----------------------------------------------------------------------


def check_generated(root):
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run(
            [sys.executable, os.path.join(root, EDITOR, "generate.py"), "--root", root, "--out", out],
            capture_output=True, text=True)
        if run.returncode != 0:
            detail = (run.stderr.strip().splitlines() or ["exit status %d" % run.returncode])[-1]
            problem("tools/editor/generate.py failed: %s" % detail)
            return
        for name in sorted(os.listdir(out)):
            with open(os.path.join(out, name), encoding="utf-8", newline="") as f:
                fresh = f.read()
            path = os.path.join(root, EDITOR, name)
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    current = f.read()
            except FileNotFoundError:
                current = None
            if current != fresh:
                problem("%s differs from what tools/editor/generate.py writes now; run it"
                        % os.path.join(EDITOR, name))


# --- TextMate ------------------------------------------------------------------------------


def compile_regex(source, where):
    # Python reads (?P<...>) as a named group, Oniguruma rejects it; most of what Oniguruma has
    # and Python lacks (\h, \G, \p{...}, variable-width lookbehind) fails to compile below.
    if "(?P" in source:
        problem("%s: %s: (?P...) is Python-only" % (GRAMMAR, where))
        return None
    try:
        return re.compile(source)
    except re.error as e:
        problem("%s: %s: regex %r does not compile: %s" % (GRAMMAR, where, source, e))
        return None


class TextMate:
    """Enough of a TextMate engine to see which scopes each character gets: at each position the
    first rule (in order, includes expanded) that matches there wins, as the earliest match with
    ties to the first rule does in a TextMate tokenizer; begin/end rules nest across lines."""

    def __init__(self, data):
        self.repository = data.get("repository", {})
        self.top = data.get("patterns", [])
        self.ok = True
        self.regex = {}
        self._compile(data, "grammar")
        self.top_rules = self.expand(self.top, "patterns")

    def _compile(self, node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("match", "begin", "end", "while") and isinstance(value, str):
                    rx = compile_regex(value, "%s.%s" % (where, key))
                    if rx is None:
                        self.ok = False
                    self.regex[id(node), key] = rx
                else:
                    self._compile(value, "%s.%s" % (where, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                self._compile(value, "%s[%d]" % (where, i))

    def expand(self, patterns, where, seen=()):
        """The rules a pattern list stands for, includes and pattern-only groups flattened."""
        rules = []
        for i, p in enumerate(patterns):
            if "include" in p:
                ref = p["include"]
                if ref in ("$self", "$base"):
                    target = {"patterns": self.top}
                elif ref.startswith("#") and ref[1:] in self.repository:
                    target = self.repository[ref[1:]]
                else:
                    problem("%s: %s[%d]: include %r names no rule" % (GRAMMAR, where, i, ref))
                    self.ok = False
                    continue
                if ref in seen:
                    continue
                if "match" in target or "begin" in target:
                    rules.append(target)
                else:
                    rules += self.expand(target.get("patterns", []), ref, seen + (ref,))
            elif "match" in p or "begin" in p:
                rules.append(p)
            else:
                rules += self.expand(p.get("patterns", []), where, seen)
        return rules

    def _assign(self, line, m, name, captures, base, out):
        scopes = base + ((name,) if name else ())
        for i in range(m.start(), m.end()):
            out[i] = scopes
        for key in sorted(captures or {}, key=int):
            group = int(key)
            if group > m.re.groups or m.start(group) < 0 or m.start(group) == m.end(group):
                continue
            capture = captures[key]
            inner = scopes + ((capture["name"],) if "name" in capture else ())
            for i in range(m.start(group), m.end(group)):
                out[i] = inner
            if "patterns" in capture:
                self._scan_span(line, m.start(group), m.end(group), self.expand(capture["patterns"], "captures"),
                                inner, out)

    def _scan_span(self, line, start, stop, rules, base, out):
        pos = start
        while pos < stop:
            for rule in rules:
                rx = self.regex.get((id(rule), "match"))
                m = rx.match(line, pos, stop) if rx else None
                if m and m.end() > pos:
                    self._assign(line, m, rule.get("name"), rule.get("captures"), base, out)
                    pos = m.end()
                    break
            else:
                pos += 1

    def tokenize(self, text):
        """Yields (line number, line, scopes per character) for each line of text."""
        stack = []  # (rule, scopes inside it, its inner rules)
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw + "\n"  # as TextMate engines see a line
            out = [()] * len(line)
            pos = 0
            while pos < len(line):
                if stack:
                    rule, scopes, rules = stack[-1]
                    end = self.regex.get((id(rule), "end"))
                    m = end.match(line, pos) if end else None
                    if m:
                        self._assign(line, m, None, rule.get("endCaptures", rule.get("captures")), scopes, out)
                        stack.pop()
                        pos = m.end()
                        continue
                    base = scopes + ((rule["contentName"],) if "contentName" in rule else ())
                else:
                    rules, base = self.top_rules, ()
                for candidate in rules:
                    if "match" in candidate:
                        rx = self.regex.get((id(candidate), "match"))
                        m = rx.match(line, pos) if rx else None
                        if m and m.end() > pos:
                            self._assign(line, m, candidate.get("name"), candidate.get("captures"), base, out)
                            pos = m.end()
                            break
                    else:
                        rx = self.regex.get((id(candidate), "begin"))
                        m = rx.match(line, pos) if rx else None
                        if m and m.end() > pos:
                            scopes = base + ((candidate["name"],) if "name" in candidate else ())
                            self._assign(line, m, None, candidate.get("beginCaptures", candidate.get("captures")),
                                         scopes, out)
                            stack.append((candidate, scopes, self.expand(candidate.get("patterns", []), "patterns")))
                            pos = m.end()
                            break
                else:
                    out[pos] = base
                    pos += 1
            yield number, line, out

    def scopes_of(self, text, word):
        """The scopes of each character of the first whole `word` in a one-line text."""
        m = re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % re.escape(word), text)
        _, _, out = next(self.tokenize(text))
        return [out[i] for i in range(m.start(), m.end())]


# Each kind of name, in a line where it is used, and the scope it must get there.
USES = {
    "keyword": ("{}", "keyword."),
    "encoding": ("lit {} u8[1]", "support.constant.encoding."),
    "map function": ("map {} 1 (const u8[1] 0)", "support.function.map."),
    "scan operator": ("scan {} 0 (const u8[1] 0)", "support.function.scan."),
    "dtype": ('tensor "t" {}[1] @0+1 = const u8[1] 0', "support.type.dtype."),
}


def check_textmate(root, names, punctuation):
    try:
        data = json.loads(read(root, GRAMMAR))
    except (OSError, ValueError) as e:
        problem("%s: not valid JSON: %s" % (GRAMMAR, e))
        return
    if data.get("scopeName") != "source.bdsl":
        problem("%s: scopeName is %r, not 'source.bdsl'" % (GRAMMAR, data.get("scopeName")))
    if "bdsl" not in data.get("fileTypes", []):
        problem("%s: fileTypes does not list bdsl" % GRAMMAR)
    grammar = TextMate(data)
    if not grammar.ok:
        return

    for kind, found in names.items():
        template, prefix = USES[kind]
        for name in found:
            scopes = grammar.scopes_of(template.format(name), name)
            if not all(any(s.startswith(prefix) for s in char) for char in scopes):
                got = sorted({s for char in scopes for s in char}) or ["no scope"]
                problem("%s: %s '%s' is not highlighted as one (%s*): %s"
                        % (GRAMMAR, kind, name, prefix, ", ".join(got)))
    for p in punctuation:
        _, _, out = next(grammar.tokenize(p))
        if not out[0] or any(s.startswith("invalid.") for s in out[0]):
            problem("%s: punctuation '%s' of Brevis.g4 gets %s" % (GRAMMAR, p, ", ".join(out[0]) or "no scope"))

    lit = os.path.join(root, "test", "lit")
    programs = sorted(os.path.join(d, f) for d, _, files in os.walk(lit) for f in files if f.endswith(".bdsl"))
    if not programs:
        problem("no .bdsl programs under test/lit to tokenize")
    for path in programs:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        invalid_ok = rel.startswith(INVALID_ALLOWED)
        for number, line, out in grammar.tokenize(text):
            col = 0
            while col < len(line):
                scopes = out[col]
                bad = not scopes or (not invalid_ok and any(s.startswith("invalid.") for s in scopes))
                if line[col].isspace() or not bad:
                    col += 1
                    continue
                start = col  # one report per run of characters with the same scopes
                while col < len(line) and not line[col].isspace() and out[col] == scopes:
                    col += 1
                what = "has no scope" if not scopes else "is marked %s" % ", ".join(scopes)
                problem("%s:%d:%d: '%s' %s" % (rel, number, start + 1, line[start:col], what))


# --- Vim -----------------------------------------------------------------------------------

VIM_GROUPS = {
    "keyword": ("bdslDeclaration", "bdslOperator"),
    "encoding": ("bdslEncoding",),
    "map function": ("bdslMapFn",),
    "scan operator": ("bdslScanOp",),
    "dtype": ("bdslDType",),
}


def check_vim(root, names):
    try:
        text = read(root, VIM)
    except OSError as e:
        problem("%s: %s" % (VIM, e))
        return
    words = {}  # highlight group -> the names its keyword lists and alternations spell out
    for line in text.splitlines():
        m = re.match(r"\s*syn(?:tax)?\s+(keyword|match)\s+(\w+)\s+(.*)", line)
        if not m:
            continue
        kind, group, rest = m.groups()
        found = words.setdefault(group, set())
        if kind == "keyword":
            found.update(w for w in rest.split() if "=" not in w)
        else:
            for alternation in re.findall(r"\\%\(([^()]*)\\\)", rest):
                found.update(alternation.split(r"\|"))
    for kind, found in names.items():
        for name in found:
            if not any(name in words.get(group, ()) for group in VIM_GROUPS[kind]):
                problem("%s: %s '%s' is missing (expected in %s)" % (VIM, kind, name, " or ".join(VIM_GROUPS[kind])))
    if "b:current_syntax" not in text:
        problem("%s: does not set b:current_syntax" % VIM)


# --- installation files --------------------------------------------------------------------


def check_install_files(root):
    ftdetect = os.path.join(EDITOR, "ftdetect-bdsl.vim")
    try:
        if not re.search(r"^\s*au(tocmd)?\s+BufRead,BufNewFile\s+\*\.bdsl\s+set\s+filetype=bdsl\s*$",
                         read(root, ftdetect), re.M):
            problem("%s: does not set filetype=bdsl for *.bdsl" % ftdetect)
    except OSError as e:
        problem("%s: %s" % (ftdetect, e))
    package = os.path.join(EDITOR, "vscode", "package.json")
    try:
        contributes = json.loads(read(root, package))["contributes"]
        grammars = [g for g in contributes["grammars"] if g.get("language") == "bdsl"]
        languages = [lang for lang in contributes["languages"] if lang.get("id") == "bdsl"]
        if not languages or ".bdsl" not in languages[0].get("extensions", []):
            problem("%s: no language bdsl for .bdsl files" % package)
        elif not os.path.isfile(os.path.join(root, EDITOR, "vscode", languages[0].get("configuration", ""))):
            problem("%s: its language configuration is not in tools/editor/vscode/" % package)
        # The grammar is copied beside package.json under the path it names (README.md).
        if not grammars or grammars[0].get("scopeName") != "source.bdsl" \
                or os.path.basename(grammars[0].get("path", "")) != os.path.basename(GRAMMAR):
            problem("%s: no grammar source.bdsl from %s" % (package, os.path.basename(GRAMMAR)))
    except (OSError, ValueError, KeyError, TypeError) as e:
        problem("%s: %s" % (package, e))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="the source tree to check (default: this checkout)")
    root = os.path.abspath(parser.parse_args().root)
    names, punctuation = language(root)
    check_generated(root)
    check_textmate(root, names, punctuation)
    check_vim(root, names)
    check_install_files(root)
    for message in problems:
        print(message)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
