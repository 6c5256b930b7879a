"""Command-line parts every launcher shares.

The role flags are `layout.add_role_flags`; here: the command after `--`,
the supervision flags of the launchers that restart tasks themselves
(local processes, Ray), and a parser whose errors are one line.
"""

import argparse
import math
from typing import NoReturn

from estimator_rt.launch.exit_policy import BAD_INPUT_EXIT_CODE
from estimator_rt.launch.layout import role_counts_problem


class OneLineErrorParser(argparse.ArgumentParser):
  """An ArgumentParser whose errors are one `error: ...` line and exit 2
  (argparse's own prints the usage first): for entries that run inside a
  scheduler's task, whose log should say what was wrong and nothing else."""

  def error(self, message: str) -> NoReturn:
    self.exit(BAD_INPUT_EXIT_CODE, f'error: {message}\n')


def add_command(parser: argparse.ArgumentParser) -> None:
  """Adds the command, everything after `--`."""
  parser.add_argument('command', nargs=argparse.REMAINDER)


def take_command(parser: argparse.ArgumentParser, args: argparse.Namespace,
                 *, who: str = 'every task') -> None:
  """Strips the `--` from `args.command`; an error if no command is left.

  Args:
    who: whose command it is, for the error ('every task', 'the task').
  """
  if args.command[:1] == ['--']:
    args.command = args.command[1:]
  if not args.command:
    parser.error(f'give the command {who} runs after --')


def check_roles(parser: argparse.ArgumentParser,
                args: argparse.Namespace) -> None:
  """An error if the role flags make no cluster."""
  problem = role_counts_problem(workers=args.workers, ps=args.ps,
                                chief=args.chief, evaluator=args.evaluator)
  if problem:
    parser.error(problem)


def add_supervision_flags(parser: argparse.ArgumentParser) -> None:
  """Adds the flags of `supervisor.Supervisor`: the restart budgets, the
  grace period, the overall timeout, and the status and pid files."""
  parser.add_argument('--max_restarts', type=int, default=0,
                      help='restarts allowed for tasks that fail (exit '
                      'non-zero other than 2 and 143, or are killed by a '
                      'signal) before the job is done; 0: a failure ends '
                      'the run')
  parser.add_argument('--max_preemptions', type=int, default=100,
                      help='restarts allowed for tasks that are preempted '
                      '(exit 143), counted apart from --max_restarts')
  parser.add_argument('--grace_secs', type=float, default=120,
                      help='after the chief ends, how long the other tasks '
                      'get to exit on their own; when tasks are stopped (a '
                      'restart, the launcher signalled), how long between '
                      'SIGTERM and SIGKILL')
  parser.add_argument('--timeout_secs', type=float, default=None,
                      help='stop everything after this long in all '
                      '(restarts included); exit code 124')
  parser.add_argument('--status_file', default=None,
                      help='write every task\'s exit code and the restart '
                      'history here as JSON')
  parser.add_argument('--pid_file', default=None,
                      help='keep every task\'s current process id (on its '
                      'node) here as JSON ({"worker:1": pid, ...}), '
                      'rewritten at each start')


def check_supervision_flags(parser: argparse.ArgumentParser,
                            args: argparse.Namespace) -> None:
  """An error for a negative budget or a grace period or timeout that is
  not a finite number of seconds, 0 or more."""
  for flag in ('max_restarts', 'max_preemptions'):
    if getattr(args, flag) < 0:
      parser.error(f'--{flag}={getattr(args, flag)}: must be 0 or more')
  check_seconds(parser, args, 'grace_secs', 'timeout_secs')


def check_seconds(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  *flags: str) -> None:
  """An error for any of `flags` set to something other than a finite
  number, 0 or more."""
  for flag in flags:
    value = getattr(args, flag)
    if value is not None and not (math.isfinite(value) and value >= 0):
      parser.error(f'--{flag}={value}: must be a finite number, 0 or more')
