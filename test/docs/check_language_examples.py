#!/usr/bin/env python3
"""Runs the examples of docs/language.md with the brevisc on PATH, so the reference cannot drift
from the tool:

- every operator example, a line `Example: `EXPR` -> W1, W2, ... .`, is checked and run, and its
  words (decimal or 0x hex, before any parenthesis) must be what `brevisc run` writes;
- every ```sh block of the section "Editing a program by hand" runs in a fresh directory (where
  `test/data/` is the repository's), one `$ ` command after another; the lines that follow a
  command are its output (stdout and stderr), where `…` stands for any text within a line and a
  caret line for a caret in any column.

Usage: check_language_examples.py [DOC]   (default: docs/language.md beside this script's tree)
Exits 1 with one line per example that does not hold."""
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def container_bytes(width):
    return 1 if width <= 8 else 2 if width <= 16 else 4 if width <= 32 else 8


def check_operator_examples(text, problems):
    examples = re.findall(r'^Example: `([^`]+)` → ([0-9a-fx, ]+?)(?: \(.*\))?\.$', text, re.M)
    if not examples:
        problems.append('no operator examples found')
    with tempfile.TemporaryDirectory() as tmp:
        for expr, words in examples:
            want = [int(w, 0) for w in words.split(', ')]
            src = os.path.join(tmp, 'e.bdsl')
            with open(src, 'w') as f:
                f.write(expr + '\n')
            typed = subprocess.run(['brevisc', 'check', '--types', src], capture_output=True, text=True)
            m = re.search(r': u(\d+)\[(\d+)\]\s*$', typed.stdout)
            if typed.returncode != 0 or not m:
                problems.append(f'{expr}: does not check: {typed.stderr.strip()}')
                continue
            out = os.path.join(tmp, 'e.out')
            ran = subprocess.run(['brevisc', 'run', '-f', src, '-o', out], capture_output=True, text=True)
            if ran.returncode != 0:
                problems.append(f'{expr}: does not run: {ran.stderr.strip()}')
                continue
            size = container_bytes(int(m.group(1)))
            data = open(out, 'rb').read()
            got = [int.from_bytes(data[i:i + size], 'little') for i in range(0, len(data), size)]
            if got != want:
                problems.append(f'{expr}: gives {got}, the documentation says {want}')


def matches(expected, actual):
    if expected.strip() == '^':  # a caret under the column reported: wherever that lies now
        return re.fullmatch(r' *\^', actual) is not None
    pattern = '.*'.join(re.escape(part) for part in expected.split('…'))
    return re.fullmatch(pattern, actual) is not None


def check_walkthrough(text, problems):
    section = text.split('## Editing a program by hand', 1)
    if len(section) < 2:
        problems.append('no section "Editing a program by hand"')
        return
    section = section[1].split('\n## ', 1)[0]
    blocks = re.findall(r'```sh\n(.*?)```', section, re.S)
    if not blocks:
        problems.append('the walk-through has no commands')
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, 'test'))
        os.symlink(os.path.join(ROOT, 'test', 'data'), os.path.join(tmp, 'test', 'data'))
        for block in blocks:
            steps = []  # (command, expected output lines)
            for line in block.rstrip('\n').split('\n'):
                if line.startswith('$ '):
                    steps.append((line[2:], []))
                elif steps:
                    steps[-1][1].append(line)
            for command, expected in steps:
                ran = subprocess.run(['bash', '-c', command], cwd=tmp, capture_output=True, text=True)
                actual = (ran.stdout + ran.stderr).rstrip('\n').split('\n') if (ran.stdout + ran.stderr).strip() else []
                if len(actual) != len(expected) or not all(matches(e, a) for e, a in zip(expected, actual)):
                    problems.append(f'$ {command}\n  documented:\n    ' + '\n    '.join(expected) +
                                    '\n  printed:\n    ' + '\n    '.join(actual))


def main():
    doc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'docs', 'language.md')
    text = open(doc, encoding='utf-8').read()
    problems = []
    check_operator_examples(text, problems)
    check_walkthrough(text, problems)
    for p in problems:
        print(f'{doc}: {p}')
    sys.exit(1 if problems else 0)


main()
