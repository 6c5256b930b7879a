"""The README and docs/: links that resolve, a quick start the tests run, a
site that builds.

- Every relative link in README.md and docs/*.md names a file that exists
  and, with a #fragment, a heading of that file; the fragment must be the
  heading's id both on GitHub and in the MkDocs site (their slugs differ for
  some punctuation), so that a link works wherever it is read.
- Every command of the README's quick start (each line of a ```sh block
  under "## Quick start") is one that runs when the project's checks run:
  `make test` is .ci/run's command; any other `make` target's recipe lines,
  and any other command, must be a `README_COMMAND` of a test module, which
  that test runs as written (tests/test_main.py: the default job).
- `mkdocs build --strict` builds the site from docs/ (no network: the
  default theme, highlight.js off) with no warning: every page in the nav,
  every link and anchor found.
"""

import ast
import os
import re
import shlex
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO, 'docs')
README = os.path.join(REPO, 'README.md')
MAX_README_LINES = 300

_LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)')
_FENCE = re.compile(r'^(```|~~~)')


def _markdown_files():
  yield README
  for name in sorted(os.listdir(DOCS)):
    if name.endswith('.md'):
      yield os.path.join(DOCS, name)


def _outside_code(text: str):
  """`text`'s lines outside fenced code blocks, with inline code removed."""
  fenced = False
  for line in text.splitlines():
    if _FENCE.match(line):
      fenced = not fenced
      continue
    if not fenced:
      yield re.sub(r'`[^`]*`', '', line), line


def _github_slug(heading: str) -> str:
  text = heading.replace('`', '').strip().lower()
  return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')


def _mkdocs_slug(heading: str) -> str:
  # Python-Markdown's toc.slugify, on the heading's text (code spans kept).
  text = heading.replace('`', '')
  text = re.sub(r'[^\w\s-]', '', text).strip().lower()
  return re.sub(r'[-\s]+', '-', text)


def _anchors(path: str):
  """(GitHub's, MkDocs') heading ids of `path`."""
  github, mkdocs = set(), set()
  fenced = False
  with open(path) as f:
    for line in f:
      if _FENCE.match(line):
        fenced = not fenced
      elif not fenced and re.match(r'#{1,6} ', line):
        heading = line.lstrip('#').strip()
        github.add(_github_slug(heading))
        mkdocs.add(_mkdocs_slug(heading))
  return github, mkdocs


def _links():
  for path in _markdown_files():
    with open(path) as f:
      text = f.read()
    for number, (line, _) in enumerate(_outside_code(text), 1):
      for target in _LINK.findall(line):
        yield path, number, target


def test_every_relative_link_resolves():
  broken = []
  for path, number, target in _links():
    if re.match(r'[a-z]+://|mailto:', target):
      continue
    where = f'{os.path.relpath(path, REPO)}:{number}: {target}'
    file_part, _, fragment = target.partition('#')
    linked = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
              if file_part else path)
    if not os.path.exists(linked):
      broken.append(f'{where}: no such file')
      continue
    if fragment:
      if not linked.endswith('.md'):
        broken.append(f'{where}: a fragment of a file that is not Markdown')
        continue
      github, mkdocs = _anchors(linked)
      if fragment not in github or fragment not in mkdocs:
        broken.append(f'{where}: no heading with this id (GitHub: '
                      f'{fragment in github}, MkDocs: {fragment in mkdocs})')
  assert not broken, '\n'.join(broken)


def test_the_links_are_checked():
  # The check above would pass on no links at all.
  links = list(_links())
  assert sum(1 for path, _, _ in links if path == README) >= 20
  assert sum(1 for _, _, target in links if '#' in target) >= 5


def test_the_readme_is_a_ten_minute_read():
  with open(README) as f:
    lines = f.read().splitlines()
  assert len(lines) <= MAX_README_LINES, len(lines)
  # CI and newcomers look for these two.
  assert 'make run' in '\n'.join(lines) and 'make test' in '\n'.join(lines)


def _quick_start_commands():
  with open(README) as f:
    text = f.read()
  start = text.index('\n## Quick start\n')
  end = text.index('\n## ', start + 1)
  commands, block = [], None
  for line in text[start:end].splitlines():
    if _FENCE.match(line):
      block = line[3:].strip() if block is None else None
      continue
    if block == 'sh':
      command = line.split(' #')[0].strip()
      if command and not command.startswith('#'):
        commands.append(command)
  return commands


def _make_recipe(target: str):
  """The command lines of the Makefile's `target`, `$(PY)` as `python`."""
  with open(os.path.join(REPO, 'Makefile')) as f:
    lines = f.read().splitlines()
  start = next(i for i, line in enumerate(lines)
               if re.match(rf'{re.escape(target)}:', line))
  recipe = []
  for line in lines[start + 1:]:
    if not line.startswith('\t'):
      break
    recipe.append(line.strip().replace('$(PY)', 'python'))
  return recipe


def _commands_tests_run():
  """Every README_COMMAND constant of the test modules."""
  found = {}
  tests = os.path.dirname(os.path.abspath(__file__))
  for name in sorted(os.listdir(tests)):
    if not (name.startswith('test_') and name.endswith('.py')):
      continue
    with open(os.path.join(tests, name)) as f:
      tree = ast.parse(f.read())
    for node in tree.body:
      if (isinstance(node, ast.Assign) and
          any(getattr(t, 'id', '').startswith('README_COMMAND')
              for t in node.targets) and
          isinstance(node.value, ast.Constant)):
        found[node.value.value] = name
  return found


def test_every_quick_start_command_is_one_the_checks_run():
  commands = _quick_start_commands()
  assert 'make run' in commands and 'make test' in commands, commands
  run_by_tests = _commands_tests_run()
  with open(os.path.join(REPO, '.ci', 'run')) as f:
    ci = [line.strip() for line in f if not line.startswith('#')]
  unrun = []
  for command in commands:
    if command in ci:
      continue
    words = shlex.split(command)
    expanded = (_make_recipe(words[1]) if words[:1] == ['make'] and
                len(words) == 2 else [command])
    unrun += [f'{command}: {line}' for line in expanded
              if line not in run_by_tests]
  assert not unrun, ('quick start commands no test runs:\n' + '\n'.join(unrun)
                     + f'\n(commands the tests run: {run_by_tests})')


def test_the_site_builds_strictly(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'mkdocs', 'build', '--strict', '--quiet',
       '--site-dir', str(tmp_path / 'site')],
      cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert os.path.isfile(tmp_path / 'site' / 'index.html')
  pages = [name[:-3] for name in os.listdir(DOCS) if name.endswith('.md')]
  for page in pages:
    if page != 'index':
      assert os.path.isfile(tmp_path / 'site' / page / 'index.html'), page


@pytest.mark.parametrize('page', ['README.md'] + sorted(
    os.path.join('docs', name) for name in os.listdir(DOCS)
    if name.endswith('.md')))
def test_no_page_points_into_the_workspace(page):
  with open(os.path.join(REPO, page)) as f:
    text = f.read()
  assert '../shared/' not in text and '/work/' not in text
