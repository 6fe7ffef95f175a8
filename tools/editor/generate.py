#!/usr/bin/env python3
"""Writes the editor syntax files for .bdsl programs from the language's own definitions.

Usage: generate.py [--root REPO] [--out DIR]   (defaults: this checkout, tools/editor/)

Every name an editor should know is read from where the compiler reads it: keywords and
punctuation from frontend/Brevis.g4, encodings, map functions and dtypes from lang/*.def, scan
operators from lang/Ast.cpp and the literal-hole encoding `auto` from lang/Encoding.h. Writes
brevis.tmLanguage.json (TextMate: VS Code and others) and bdsl.vim (Vim). The output depends only
on those files, so test/editor/check_syntax.py can tell when the checked-in copies are stale.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.dirname(os.path.dirname(HERE))

GRAMMAR_FILE = "brevis.tmLanguage.json"
VIM_FILE = "bdsl.vim"

# One scope (TextMate) and one highlight group (Vim) per punctuation token of the grammar. A
# token missing here stops the generator: a new symbol must be given a meaning, not left plain.
PUNCTUATION = {
    "(": ("punctuation.section.parens.begin.bdsl", "bdslDelimiter"),
    ")": ("punctuation.section.parens.end.bdsl", "bdslDelimiter"),
    "[": ("punctuation.section.brackets.begin.bdsl", "bdslDelimiter"),
    "]": ("punctuation.section.brackets.end.bdsl", "bdslDelimiter"),
    ",": ("punctuation.separator.comma.bdsl", "bdslDelimiter"),
    ":": ("punctuation.separator.colon.bdsl", "bdslDelimiter"),
    "=": ("keyword.operator.assignment.bdsl", "bdslSymbol"),
    "@": ("keyword.operator.range.bdsl", "bdslSymbol"),
    "+": ("keyword.operator.range.bdsl", "bdslSymbol"),
    "?": ("keyword.operator.hole.bdsl", "bdslHole"),
}


# Names the AST builder reads in fixed places (frontend/Parser.cpp), plain identifiers to the
# grammar: `per` after a map's list of constants, the parts of `safetensors(tensors, metadata: …)`.
CONTEXTUAL = ["metadata", "per", "tensors"]


class Language:
    """The names of the language, each list sorted so that the output does not depend on the
    order of the definitions (which is meaningful to the compiler, not to an editor)."""

    def __init__(self, root):
        grammar = read(root, "frontend/Brevis.g4")
        literals = dict(re.findall(r"^([A-Z][A-Z0-9_]*)\s*:\s*'([^']*)'\s*;", grammar, re.M))
        keywords = {name: text for name, text in literals.items() if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", text)}
        # A keyword that starts a term is an operator; every other one declares part of a checkpoint.
        term = rule_body(grammar, "term")
        self.operators = sorted(text for name, text in keywords.items() if re.search(r"\b%s\b" % name, term))
        self.declarations = sorted(text for text in keywords.values() if text not in self.operators)
        self.punctuation = sorted(text for text in literals.values() if text not in keywords.values())
        self.encodings = sorted(def_names(read(root, "lang/Encodings.def"), "BREVIS_ENCODING", 1))
        self.mapfns = sorted(def_names(read(root, "lang/MapFns.def"), "BREVIS_MAPFN", 1))
        self.dtypes = sorted(def_names(read(root, "lang/DTypes.def"), "BREVIS_DTYPE", 2))
        scan = re.search(r"scanOpFromName\([^)]*\)\s*\{(.*?)\n\}", read(root, "lang/Ast.cpp"), re.S)
        self.scanops = sorted(re.findall(r'==\s*"(\w+)"', scan.group(1))) if scan else []
        auto = re.search(r'kAutoEncodingName\s*=\s*"(\w+)"', read(root, "lang/Encoding.h"))
        self.auto = auto.group(1) if auto else ""

        for what in ("operators", "declarations", "punctuation", "encodings", "mapfns", "dtypes", "scanops", "auto"):
            if not getattr(self, what):
                sys.exit("generate.py: found no %s in the language definitions" % what)
        unknown = [p for p in self.punctuation if p not in PUNCTUATION]
        if unknown:
            sys.exit("generate.py: no scope for punctuation %s; add it to PUNCTUATION" % " ".join(unknown))
        names = self.operators + self.declarations + self.encodings + self.mapfns + self.dtypes + self.scanops
        bad = [n for n in names + [self.auto] if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
        if bad:
            sys.exit("generate.py: names that are not identifiers: %s" % " ".join(bad))


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def rule_body(grammar, name):
    m = re.search(r"^%s\s*(:.*?)^\s*;" % name, grammar, re.M | re.S)
    if not m:
        sys.exit("generate.py: no rule %s in Brevis.g4" % name)
    return m.group(1)


def def_names(text, macro, index):
    """The index-th string argument (0-based among all arguments) of each macro entry."""
    names = []
    for line in text.splitlines():
        m = re.match(r"\s*%s\((.*)\)\s*$" % macro, line)
        if m:
            args = re.findall(r'"[^"]*"|[^,\s][^,]*', m.group(1))
            names.append(args[index].strip().strip('"'))
    return names


# --- TextMate ------------------------------------------------------------------------------
# Regexes stay within what Oniguruma (TextMate, VS Code) and Python's re both read the same
# way: no possessive quantifiers, no \h, no \G, fixed-width lookbehind only.

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# As loose as the lexer's NUMBER, so that a malformed number is one token, shown as one error.
NUMBER = r"[0-9][A-Za-z0-9_]*"


def words(names):
    return r"\b(" + "|".join(re.escape(n) for n in names) + r")\b"


def textmate(lang):
    repository = {
        "comment": {
            "match": r"(#).*$",
            "name": "comment.line.number-sign.bdsl",
            "captures": {"1": {"name": "punctuation.definition.comment.bdsl"}},
        },
        # Strings end on their line (the lexer's STRING has no newline), so one without its
        # closing quote is marked whole rather than swallowing the lines after it.
        "unterminated-string": {
            "match": r'"(?:[^"\\\n]|\\(?:[^\n]|$))*$',
            "name": "invalid.illegal.unterminated-string.bdsl",
        },
        "string": {
            "begin": "\"",
            "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.bdsl"}},
            "end": "\"",
            "endCaptures": {"0": {"name": "punctuation.definition.string.end.bdsl"}},
            "name": "string.quoted.double.bdsl",
            "patterns": [
                {"match": r'\\(?:["\\]|x[0-9A-Fa-f]{2})', "name": "constant.character.escape.bdsl"},
                {"match": r"\\.?", "name": "invalid.illegal.escape.bdsl"},
            ],
        },
        # Text: single quotes; \x takes two hex digits, and a backslash before any other
        # character stands for itself (JSON's \" reads as written).
        "unterminated-text": {
            "match": r"'(?:[^'\\\n]|\\(?:[^\n]|$))*$",
            "name": "invalid.illegal.unterminated-string.bdsl",
        },
        "text": {
            "begin": "'",
            "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.bdsl"}},
            "end": "'",
            "endCaptures": {"0": {"name": "punctuation.definition.string.end.bdsl"}},
            "name": "string.quoted.single.bdsl",
            "patterns": [
                {"match": r"\\(?:['\\ntr]|x[0-9A-Fa-f]{2})", "name": "constant.character.escape.bdsl"},
                {"match": r"\\x", "name": "invalid.illegal.escape.bdsl"},
                {"match": r"\\.", "name": "string.quoted.single.bdsl"},
            ],
        },
        # A tensor's dtype follows its name; there u8 is the dtype, elsewhere the stream type.
        "tensor-dtype": {
            "match": r'(?<=")\s*' + words(lang.dtypes),
            "captures": {"1": {"name": "support.type.dtype.bdsl"}},
        },
        "range": {
            "match": r"(@)\s*(%s)\s*(\+)\s*(%s)" % (NUMBER, NUMBER),
            "name": "meta.range.bdsl",
            "captures": {
                "1": {"name": PUNCTUATION["@"][0]},
                "2": {"patterns": [{"include": "#number"}]},
                "3": {"name": PUNCTUATION["+"][0]},
                "4": {"patterns": [{"include": "#number"}]},
            },
        },
        # Any name may label a merge field, keywords included (the printer writes any name).
        "field-name": {
            "match": r"\b(%s)\s*(?=:)" % IDENT,
            "captures": {"1": {"name": "variable.other.field.bdsl"}},
        },
        "literal": {
            "match": r"\b(lit)\s+" + words(sorted(lang.encodings + [lang.auto])),
            "captures": {"1": {"name": "keyword.control.operator.bdsl"}, "2": {"name": "support.constant.encoding.bdsl"}},
        },
        "map": {
            "match": r"\b(map)\s+" + words(lang.mapfns),
            "captures": {"1": {"name": "keyword.control.operator.bdsl"}, "2": {"name": "support.function.map.bdsl"}},
        },
        "scan": {
            "match": r"\b(scan)\s+" + words(lang.scanops),
            "captures": {"1": {"name": "keyword.control.operator.bdsl"}, "2": {"name": "support.function.scan.bdsl"}},
        },
        "declaration": {"match": words(lang.declarations), "name": "keyword.other.declaration.bdsl"},
        "contextual-name": {"match": words(CONTEXTUAL), "name": "keyword.other.part.bdsl"},
        "operator": {"match": words(lang.operators), "name": "keyword.control.operator.bdsl"},
        # The names below also stand alone (an operand on the next line, a half-typed term).
        "encoding": {"match": words(sorted(lang.encodings + [lang.auto])), "name": "support.constant.encoding.bdsl"},
        "map-function": {"match": words(lang.mapfns), "name": "support.function.map.bdsl"},
        "scan-operator": {"match": words(lang.scanops), "name": "support.function.scan.bdsl"},
        "stream-type": {"match": r"\bu[0-9]+\b", "name": "storage.type.stream.bdsl"},
        "dtype": {"match": words(lang.dtypes), "name": "support.type.dtype.bdsl"},
        "number": {
            "patterns": [
                {"match": r"\b0[xX][0-9A-Fa-f]+\b", "name": "constant.numeric.hex.bdsl"},
                {"match": r"\b[0-9]+\b", "name": "constant.numeric.decimal.bdsl"},
                {"match": r"\b" + NUMBER, "name": "invalid.illegal.number.bdsl"},
            ]
        },
        "punctuation": {
            "patterns": [
                {"match": re.escape(p), "name": PUNCTUATION[p][0]} for p in lang.punctuation
            ]
        },
        # Every other name is rejected by the compiler: encodings, map functions, scan operators,
        # dtypes and stream types are closed lists, and field names are matched above.
        "unknown-name": {"match": r"\b" + IDENT, "name": "invalid.illegal.name.bdsl"},
        "unexpected-character": {"match": r"\S", "name": "invalid.illegal.character.bdsl"},
    }
    # First match wins, so the contextual rules precede the bare names they refine.
    order = [
        "comment", "unterminated-string", "string", "unterminated-text", "text", "tensor-dtype", "range", "field-name",
        "literal", "map", "scan", "declaration", "contextual-name", "operator", "encoding", "map-function",
        "scan-operator", "stream-type", "dtype", "number", "punctuation", "unknown-name",
        "unexpected-character",
    ]
    assert sorted(order) == sorted(repository)
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "Brevis",
        "scopeName": "source.bdsl",
        "fileTypes": ["bdsl"],
        "comment": "Generated by tools/editor/generate.py from frontend/Brevis.g4 and lang/*.def; do not edit.",
        "patterns": [{"include": "#" + name} for name in order],
        "repository": repository,
    }


# --- Vim -----------------------------------------------------------------------------------
# Vim gives a keyword precedence over any match, and among matches starting at one column the one
# defined last; everything is therefore a match, defined from the most general to the most
# specific, so that field names and contextual names win over the bare lists.


def vim_words(names):
    return r"\<\%(" + r"\|".join(names) + r"\)\>"


def vim_match(group, pattern, extra=""):
    for delim in "\"/!%;'":
        if delim not in pattern:
            return "syn match %s %s%s%s%s" % (group, delim, pattern, delim, extra)
    raise ValueError("no delimiter for " + pattern)


def vim(lang):
    groups = {}
    for p in lang.punctuation:
        groups.setdefault(PUNCTUATION[p][1], []).append(p)
    lines = [
        '" Vim syntax file for Brevis programs (.bdsl): install as syntax/bdsl.vim.',
        '" Generated by tools/editor/generate.py from frontend/Brevis.g4 and lang/*.def; do not edit.',
        "",
        'if exists("b:current_syntax")',
        "  finish",
        "endif",
        "",
        "syn case match",
        "syn iskeyword @,48-57,_",
        "",
        '" The compiler rejects anything not matched below.',
        vim_match("bdslBadChar", r"\S"),
        vim_match("bdslBadName", r"\<\h\w*\>"),
        vim_match("bdslBadNumber", r"\<\d\w*\>"),
        vim_match("bdslNumber", r"\<\d\+\>"),
        vim_match("bdslNumber", r"\<0[xX]\x\+\>"),
    ]
    for group in sorted(groups):
        lines.append(vim_match(group, r"\V" + r"\|".join(p.replace("\\", "\\\\") for p in groups[group])))
    lines += [
        vim_match("bdslDType", vim_words(lang.dtypes)),
        vim_match("bdslStreamType", r"\<u\d\+\>"),
        '" A tensor\'s dtype follows its name; there u8 is the dtype, elsewhere the stream type.',
        vim_match("bdslDType", r'\%("\s*\)\@<=' + vim_words(lang.dtypes)),
        vim_match("bdslScanOp", vim_words(lang.scanops)),
        vim_match("bdslMapFn", vim_words(lang.mapfns)),
        vim_match("bdslEncoding", vim_words(sorted(lang.encodings + [lang.auto]))),
        vim_match("bdslScanOp", r"\%(\<scan\s\+\)\@<=" + vim_words(lang.scanops)),
        vim_match("bdslOperator", vim_words(lang.operators)),
        vim_match("bdslDeclaration", vim_words(lang.declarations)),
        vim_match("bdslDeclaration", vim_words(CONTEXTUAL)),
        '" Any name may label a merge field, keywords included.',
        vim_match("bdslField", r"\<\h\w*\ze\s*:"),
        "",
        '" Strings end on their line, as in the lexer; one without its closing quote is an error.',
        vim_match("bdslBadEscape", r"\\.\=", " contained"),
        vim_match("bdslEscape", r'\\\%(["\\]\|x\x\x\)', " contained"),
        r'syn region bdslString start=+"+ skip=+\\.+ end=+"+ end=+$+ oneline contains=bdslEscape,bdslBadEscape',
        vim_match("bdslBadString", r'"\%([^"\\]\|\\.\|\\$\)*$'),
        vim_match("bdslBadTextEscape", r"\\x", " contained"),
        vim_match("bdslTextEscape", r"\\\%(['\\ntr]\|x\x\x\)", " contained"),
        r"syn region bdslText start=+'+ skip=+\\.+ end=+'+ end=+$+ oneline contains=bdslTextEscape,bdslBadTextEscape",
        vim_match("bdslBadText", r"'\%([^'\\]\|\\.\|\\$\)*$"),
        vim_match("bdslComment", r"#.*$", " contains=@Spell"),
        "",
        "hi def link bdslComment Comment",
        "hi def link bdslString String",
        "hi def link bdslEscape SpecialChar",
        "hi def link bdslBadEscape Error",
        "hi def link bdslBadString Error",
        "hi def link bdslText String",
        "hi def link bdslTextEscape SpecialChar",
        "hi def link bdslBadTextEscape Error",
        "hi def link bdslBadText Error",
        "hi def link bdslNumber Number",
        "hi def link bdslBadNumber Error",
        "hi def link bdslDeclaration Keyword",
        "hi def link bdslOperator Statement",
        "hi def link bdslEncoding Constant",
        "hi def link bdslMapFn Function",
        "hi def link bdslScanOp Function",
        "hi def link bdslDType Type",
        "hi def link bdslStreamType Type",
        "hi def link bdslField Identifier",
        "hi def link bdslDelimiter Delimiter",
        "hi def link bdslSymbol Operator",
        "hi def link bdslHole Special",
        "hi def link bdslBadName Error",
        "hi def link bdslBadChar Error",
        "",
        'let b:current_syntax = "bdsl"',
    ]
    return "\n".join(lines) + "\n"


def outputs(root):
    """File name -> contents, for everything this script writes."""
    lang = Language(root)
    return {
        GRAMMAR_FILE: json.dumps(textmate(lang), indent=2, ensure_ascii=False) + "\n",
        VIM_FILE: vim(lang),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="the source tree to read (default: this checkout)")
    parser.add_argument("--out", default=HERE, help="where to write the syntax files (default: tools/editor)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, text in outputs(args.root).items():
        path = os.path.join(args.out, name)
        # Rewriting only what changed keeps an up-to-date checkout untouched (mtimes included).
        if os.path.exists(path):
            with open(path, encoding="utf-8", newline="") as f:
                if f.read() == text:
                    continue
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)


if __name__ == "__main__":
    main()
