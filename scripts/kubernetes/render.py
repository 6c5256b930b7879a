#!/usr/bin/env python3
"""Writes the Kubernetes manifests that run an estimator_rt cluster.

    python scripts/kubernetes/render.py --workers 2 --ps 1 --chief \
        --evaluator --image registry.example/estimator-rt:1 \
        --model_dir /mnt/shared/run1 --volume_claim shared-models \
        -- python -m estimator_rt.main \
        --distribution_strategy=parameter_server --max_steps=100000 ... \
        | kubectl apply -f -

By default: an Indexed Job (one pod per task, index 0 the chief) and the
headless Service that gives its pods stable names; each pod derives its
TF_CONFIG from its index (`python -m estimator_rt.launch.kubernetes`). With
`--tfjob`: a Kubeflow TFJob, whose operator writes TF_CONFIG itself. See
estimator_rt/launch/kubernetes_manifests.py for what each field does and
what happens on failure and preemption.

The command is the same for every task; `--model_dir=<model_dir>` is
added to it unless it already has that flag (with the same value). The
image must have estimator_rt installed (and the user's model_fn and
input_fn modules). Bad flags: one `error: ...` line, exit 2.
"""

import os
import re
import sys

# Runnable from a checkout without installing: the package is two levels up.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# pylint: disable=g-import-not-at-top,wrong-import-position
from estimator_rt.launch import kubernetes_manifests as manifests
from estimator_rt.launch.arguments import OneLineErrorParser
from estimator_rt.launch.arguments import add_command
from estimator_rt.launch.layout import add_role_flags
from estimator_rt.launch.layout import role_counts_problem
# pylint: enable=g-import-not-at-top,wrong-import-position

# A Kubernetes resource quantity ('2', '500m', '4Gi', '1.5').
_QUANTITY = re.compile(r'^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$')
_DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')


def _parse_args(argv):
  parser = OneLineErrorParser(
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- command ...')
  add_role_flags(parser)
  parser.add_argument('--image', required=True,
                      help='the container image every task runs')
  parser.add_argument('--model_dir', required=True,
                      help='the shared model_dir: an absolute path where '
                      '--volume_claim is mounted in every pod, or a URL '
                      '(gs://...) TensorFlow writes itself')
  parser.add_argument('--volume_claim', default=None,
                      help='a PersistentVolumeClaim (ReadWriteMany) mounted '
                      'at --model_dir in every pod')
  parser.add_argument('--name', default='estimator-rt',
                      help='the job\'s name (also the Service\'s)')
  parser.add_argument('--namespace', default=None,
                      help='default: kubectl\'s current namespace')
  parser.add_argument('--port', type=int, default=2222,
                      help='the port every task listens on')
  parser.add_argument('--cpus', default=None,
                      help='CPU request and limit of each pod (e.g. 4, 500m)')
  parser.add_argument('--memory', default=None,
                      help='memory request and limit of each pod (e.g. 8Gi)')
  parser.add_argument('--grace_secs', type=int, default=60,
                      help='terminationGracePeriodSeconds: from SIGTERM to '
                      'SIGKILL; the runtime saves within about 5 s of '
                      'SIGTERM plus the time a checkpoint takes to write')
  parser.add_argument('--max_restarts', type=int, default=0,
                      help='failed pods (exit codes other than 0, 2 and '
                      '143) tolerated before the job fails: the Job\'s '
                      'backoffLimit. A lost multi_worker_mirrored task takes '
                      'every training pod down with it, one failure each')
  parser.add_argument('--max_preemptions', type=int, default=100,
                      help='--tfjob only: the operator\'s backoffLimit counts '
                      'preempted pods too, so it is max_restarts + this. '
                      '(The Indexed Job ignores preemptions: no limit.)')
  parser.add_argument('--no_success_policy', action='store_true',
                      help='leave out the Job\'s successPolicy (Kubernetes '
                      'before 1.31): the job completes when every task has '
                      'exited 0, instead of when the chief and the evaluator '
                      'have')
  parser.add_argument('--domain', default=None,
                      help='appended to the pods\' names in TF_CONFIG, e.g. '
                      '.svc.cluster.local; default: .<namespace>.svc with '
                      '--namespace, else nothing (the pods\' DNS search path '
                      'completes <job>-<i>.<service>)')
  parser.add_argument('--tfjob', action='store_true',
                      help='write a Kubeflow TFJob instead of an Indexed Job '
                      'and a Service')
  parser.add_argument('--output', default=None,
                      help='write the YAML here instead of stdout')
  add_command(parser)
  args = parser.parse_args(argv)
  args.command = (args.command[1:] if args.command[:1] == ['--']
                  else args.command)
  problem = (_problem(args) or
             role_counts_problem(workers=args.workers, ps=args.ps,
                                 chief=args.chief, evaluator=args.evaluator))
  if problem:
    parser.error(problem)
  args.command = _with_model_dir(args.command, args.model_dir, parser)
  return args


def _problem(args) -> str:
  """What is wrong with the flags other than the role counts, ''."""
  if not args.command:
    return 'give the command every task runs after --'
  if not args.image.strip():
    return '--image is empty: give the image with estimator_rt installed'
  problem = manifests.name_problem(args.name)
  if problem:
    return problem
  if args.namespace is not None and not (
      _DNS_LABEL.match(args.namespace) and len(args.namespace) <= 63):
    return (f'--namespace={args.namespace[:80]!r}: not a namespace name '
            '(lower-case letters, digits and \'-\')')
  if not 0 < args.port < 65536:
    return f'--port={args.port}: must be 1-65535'
  for flag in ('cpus', 'memory'):
    value = getattr(args, flag)
    if value is not None and not _QUANTITY.match(value):
      return (f'--{flag}={value[:50]!r}: not a Kubernetes quantity (e.g. 4, '
              '500m, 8Gi)')
  if not 0 < args.grace_secs <= 24 * 3600:
    return (f'--grace_secs={args.grace_secs}: must be 1-86400 seconds; '
            'the save after SIGTERM needs a few')
  if args.domain and not args.domain.startswith('.'):
    return (f'--domain={args.domain[:80]!r}: give the suffix with its '
            'leading dot, e.g. .default.svc.cluster.local')
  for flag in ('max_restarts', 'max_preemptions'):
    if getattr(args, flag) < 0:
      return f'--{flag}={getattr(args, flag)}: must be 0 or more'
  is_url = '://' in args.model_dir
  if not is_url and not os.path.isabs(args.model_dir):
    return (f'--model_dir={args.model_dir[:200]!r}: give an absolute path '
            '(where --volume_claim is mounted) or a URL such as gs://...')
  if not is_url and not args.volume_claim:
    return (f'--model_dir={args.model_dir[:200]!r} is a path in the pods: '
            'give --volume_claim=<a ReadWriteMany PersistentVolumeClaim> so '
            'every pod sees the same model_dir')
  if args.volume_claim is not None and not _DNS_LABEL.match(
      args.volume_claim.replace('.', '-')):
    return f'--volume_claim={args.volume_claim[:80]!r}: not a claim name'
  return ''


def _with_model_dir(command, model_dir, parser):
  """`command` with `--model_dir=<model_dir>`, added if missing."""
  given = [a.split('=', 1)[1] for a in command
           if a.startswith('--model_dir=')]
  if '--model_dir' in command:
    parser.error('give the command\'s --model_dir as --model_dir=PATH (one '
                 'argument)')
  if any(value != model_dir for value in given):
    parser.error(f'the command\'s --model_dir={given[0][:200]!r} is not '
                 f'--model_dir={model_dir[:200]!r}: give one model_dir')
  return list(command) if given else list(command) + [
      f'--model_dir={model_dir}']


def render(args) -> str:
  common = dict(
      name=args.name, namespace=args.namespace, image=args.image,
      command=args.command, model_dir=args.model_dir, workers=args.workers,
      ps=args.ps, chief=args.chief, evaluator=args.evaluator,
      port=args.port, volume_claim=args.volume_claim, cpus=args.cpus,
      memory=args.memory, grace_secs=args.grace_secs,
      max_restarts=args.max_restarts)
  if args.tfjob:
    return manifests.to_yaml([manifests.tf_job(
        **common, max_preemptions=args.max_preemptions)])
  domain = args.domain
  if domain is None:
    domain = f'.{args.namespace}.svc' if args.namespace else ''
  return manifests.to_yaml([
      manifests.headless_service(name=args.name, namespace=args.namespace,
                                 port=args.port),
      manifests.indexed_job(**common, domain=domain,
                            success_policy=not args.no_success_policy)])


def main(argv=None) -> int:
  args = _parse_args(argv)
  text = render(args)
  if args.output:
    with open(args.output, 'w') as f:
      f.write(text)
  else:
    sys.stdout.write(text)
  return 0


if __name__ == '__main__':
  sys.exit(main())
