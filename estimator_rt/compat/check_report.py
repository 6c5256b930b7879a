"""Prints a `--check` result (check.py): one line per use, then a summary.

    path/train.py:12: tf.estimator.Estimator: runs with a documented difference: ...
    path/train.py:40: tensorflow_estimator.python.estimator.tpu.tpu_estimator.inference_on_tpu: refused: ...
    path/old.py:3: skipped: syntax error: invalid syntax

    keras: python path/train.py: Keras 2 (tf_keras): the code of train.py uses tf.estimator (tf.estimator.Estimator, path/model.py:4)

Every line of a use starts with `file:line: name: status`, so that grep
and editors can take them; the summary counts uses per status and per name.
"""

import collections
from typing import Callable, List

from estimator_rt.compat import check

# What each status means, for the summary.
_MEANING = {
    check.RUNS: 'resolve to what runs them here, no documented difference',
    check.DIFFERS: 'run, with the documented difference shown',
    check.REFUSED: 'fail here: the reason says what to use instead',
    check.TF_BREAK: 'not tf.estimator\'s: fail on TensorFlow 2.16+ '
                    'whatever runs tf.estimator (not in the exit status)',
}


def _plural(count: int, word: str) -> str:
  return f'{count} {word}{"" if count == 1 else "s"}'


def lines(result: check.Result) -> List[str]:
  """The report of `result`, as lines."""
  entries = [(f.path, f.line, _use_line(f)) for f in result.findings]
  entries += [(s.path, s.line,
               f'{s.path}{f":{s.line}" if s.line else ""}: skipped: '
               f'{s.reason} (file not checked)')
              for s in result.skipped]
  # Files in scan order, then lines.
  order = {path: i for i, path in enumerate(result.files)}
  out = [text for _, _, text in sorted(
      entries, key=lambda e: (order[e[0]], e[1]))]
  out.append('')
  out.extend(f'keras: {k.command}: {k.keras}: {k.reason}' for k in result.keras)
  if result.keras:
    out.append('  (the import hook\'s rule, estimator_rt/compat/keras_choice.py; '
               'TF_USE_LEGACY_KERAS, when set, decides instead)')
  out.extend(_summary(result))
  return out


def _use_line(finding: check.Finding) -> str:
  text = f'{finding.path}:{finding.line}: {finding.name}: {finding.status}'
  return f'{text}: {finding.detail}' if finding.detail else text


def _summary(result: check.Result) -> List[str]:
  estimator_uses = [f for f in result.findings
                    if f.status != check.TF_BREAK]
  names = {f.name for f in estimator_uses}
  out = [f'summary: {_plural(len(result.files), "file")} scanned, '
         f'{_plural(len(estimator_uses), "use")} of '
         f'{_plural(len(names), "tf.estimator name")}'
         + (f', {len(result.skipped)} skipped (not parsed)'
            if result.skipped else '')]
  by_status = collections.Counter(f.status for f in result.findings)
  width = max(len(s) for s in check.STATUSES)
  for status in check.STATUSES:
    out.append(f'  {status:<{width}}  {by_status[status]:>5}  '
               f'{_MEANING[status]}')
  per_name = collections.Counter((f.name, f.status) for f in result.findings)
  if per_name:
    out.append('uses per name:')
    rank: Callable = lambda item: (check.STATUSES.index(item[0][1]),
                                   -item[1], item[0][0])
    for (name, status), count in sorted(per_name.items(), key=rank):
      out.append(f'  {count:>5}  {status:<{width}}  {name}')
  code = result.exit_code()
  out.append('result: ' + (
      'every tf.estimator use runs here (exit 0)' if code == 0 else
      f'{_plural(by_status[check.REFUSED], "use")} refused (exit 1)'))
  return out
