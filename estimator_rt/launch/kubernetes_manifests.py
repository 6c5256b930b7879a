"""Kubernetes manifests for a TF_CONFIG cluster: an Indexed Job with a
headless Service, or a Kubeflow TFJob. `scripts/kubernetes/render.py` is
the command line; this module builds the objects (plain dicts) and writes
them as YAML.

The Indexed Job (`indexed_job`, `headless_service`), one pod per task:

  - completionMode Indexed, completions = parallelism = the number of
    tasks: pod i is task i in `layout.task_keys` order (0 the chief) and
    runs `python -m estimator_rt.launch.kubernetes` (see that module),
    which derives its TF_CONFIG from `JOB_COMPLETION_INDEX` and the pods'
    stable names `<job>-<i>.<service>`, passes the pod IP (downward API)
    as `--bind_host`, and runs the command.
  - What an exit code does (podFailurePolicy, which needs restartPolicy
    Never): 2 (bad input) fails the job at once; 143 (preempted: the
    runtime saved a checkpoint at the end of the loop in flight) and a pod
    disrupted by Kubernetes itself (eviction, preemption, node drain: the
    DisruptionTarget condition) are ignored: the pod is recreated with the
    same index and host name and does not count against backoffLimit.
    Anything else counts against backoffLimit (`max_restarts`) and the pod
    is recreated while it lasts; past it the job fails.
  - A lost multi_worker_mirrored task (or parameter-server chief or ps):
    Kubernetes recreates only the lost pod, but the other training tasks
    notice within bounded time (a failed collective; the chief's port gone
    for 30 s) and exit non-zero, so each of their pods is recreated too,
    and the new cluster resumes from the newest checkpoint in model_dir.
    Each of those exits counts as one failure against backoffLimit: one
    lost task of a 3-task MWMS cluster may use up to 3. A lost
    parameter-server worker or evaluator is recreated alone (the
    coordinator hands the worker's work to the others meanwhile).
  - The job's result is the chief's: a successPolicy (GA in Kubernetes
    1.33, beta and on by default from 1.31) marks the job complete once
    index 0 (the chief) and the evaluator's index have succeeded, and
    stops whatever still runs (a ps server that missed the chief's done
    signal). The evaluator is in the rule because it evaluates the final
    checkpoint after the chief is done; stopping it then would lose the
    last result. `success_policy=False` leaves it out for older clusters:
    the job then completes when every index has succeeded (every task
    exits 0 on its own in a finished run).
  - backoffLimitPerIndex (GA in 1.33) is not used: its budget is per pod,
    but a lost MWMS task takes every training pod down with it, and with
    it the job keeps running other indexes after one index gave up.
  - terminationGracePeriodSeconds (`grace_secs`): the time between the
    kubelet's SIGTERM and its SIGKILL. The runtime saves at the end of the
    compiled loop in flight, and loops are cut to about 5 s, so the save
    lands a few seconds after SIGTERM plus the time the checkpoint takes
    to write (large models on slow volumes: raise it).
  - model_dir is a PersistentVolumeClaim (ReadWriteMany: every pod reads
    it, the chief writes it) mounted at model_dir in every pod, or a URL
    (gs://...) that TensorFlow writes itself, with no volume.

The TFJob (`tf_job`, kubeflow.org/v1, Kubeflow training-operator v1.x):
replica types Chief, Worker, PS, Evaluator; the operator puts TF_CONFIG in
each pod with task types `chief`, `worker`, `ps`, `evaluator` (the replica
type in lower case), every task at `<tfjob>-<type>-<i>.<namespace>.svc:
<port>`, the port being the container port named `tfjob-port` of the
container named `tensorflow` (both required by the operator). The
evaluator is in the cluster (operator v1.9; older ones left it out; the
runtime takes both). restartPolicy ExitCode: the operator recreates a pod
that exits with a code it deems retryable and fails the job on any other.
training-operator v1.9 (pkg/util/train/train_util.go) takes every code
>= 128 as retryable (a signal: 143 preempted, 137 SIGKILL or OOM-killed),
older releases 130, 137, 138 and 143; both treat 1 and 2 as permanent. So
a preempted task (143) is recreated and resumes, bad input (2) fails the
job, and so does any other failure (1, or 3): unlike the Indexed Job,
a lost MWMS task fails the TFJob, since the survivors exit 1 or 3. The
operator's runPolicy.backoffLimit counts every failed pod, the retryable
ones included, hence `max_restarts + max_preemptions`. cleanPodPolicy
None: the operator does not stop the evaluator when the chief succeeds
(it is still evaluating the final checkpoint); the servers exit on their
own when the chief tells them training is done.
"""

import json
import re
from typing import Any, Dict, List, Optional, Sequence

from estimator_rt.launch.exit_policy import BAD_INPUT_EXIT_CODE
from estimator_rt.launch.exit_policy import PREEMPTED_EXIT_CODE
from estimator_rt.launch.layout import JOB_ORDER
from estimator_rt.launch.layout import task_keys

CONTAINER_NAME = 'estimator-rt'
# The TFJob operator finds the task's container and port by these names.
TFJOB_CONTAINER_NAME = 'tensorflow'
TFJOB_PORT_NAME = 'tfjob-port'
TFJOB_REPLICA_TYPES = {'chief': 'Chief', 'worker': 'Worker', 'ps': 'PS',
                       'evaluator': 'Evaluator'}
JOB_LABEL = 'estimator-rt/job'
POD_ENTRY = ['python', '-m', 'estimator_rt.launch.kubernetes']

# DNS-1035 labels: what a Service name (and so the pods' subdomain) must be.
# The job's pods are named <name>-<index>, also a DNS label, so the name
# leaves room for the index.
_DNS_LABEL = re.compile(r'^[a-z]([-a-z0-9]*[a-z0-9])?$')
_MAX_NAME_CHARS = 50


def name_problem(name: str) -> str:
  """What is wrong with `name` as the job's (and Service's) name, ''."""
  if not _DNS_LABEL.match(name) or len(name) > _MAX_NAME_CHARS:
    return (f'--name={name[:80]!r}: must be lower-case letters, digits and '
            f"'-', start with a letter, end with a letter or digit, at most "
            f'{_MAX_NAME_CHARS} characters (it names the Service and the '
            'pods\' host names)')
  return ''


def _roles(*, workers: int, ps: int, chief: bool, evaluator: bool
           ) -> List[str]:
  return ([f'--workers={workers}', f'--ps={ps}'] +
          (['--chief'] if chief else []) +
          (['--evaluator'] if evaluator else []))


def _resources(cpus: Optional[str], memory: Optional[str]
               ) -> Dict[str, Any]:
  amounts = {k: v for k, v in (('cpu', cpus), ('memory', memory)) if v}
  # Requests equal to limits: the pod is scheduled where what it may use is
  # free, and is not the first evicted under memory pressure.
  return {'requests': dict(amounts), 'limits': dict(amounts)} if amounts else {}


def _pod_ip_env() -> List[Dict[str, Any]]:
  return [{'name': 'POD_IP',
           'valueFrom': {'fieldRef': {'fieldPath': 'status.podIP'}}},
          {'name': 'PYTHONUNBUFFERED', 'value': '1'}]


def _volume(volume_claim: Optional[str]) -> List[Dict[str, Any]]:
  if not volume_claim:
    return []
  return [{'name': 'model-dir',
           'persistentVolumeClaim': {'claimName': volume_claim}}]


def _volume_mount(volume_claim: Optional[str], model_dir: str
                  ) -> List[Dict[str, Any]]:
  if not volume_claim:
    return []
  return [{'name': 'model-dir', 'mountPath': model_dir}]


def _pod_spec(*, container_name: str, command: Sequence[str], image: str,
              port_name: str, port: int, cpus: Optional[str],
              memory: Optional[str], volume_claim: Optional[str],
              model_dir: str, grace_secs: int,
              first: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """A pod spec with the one container every task runs: the pod IP in its
  environment, its port, its resources and model_dir's volume. `first`:
  fields that come before the others (the Job's subdomain and restart
  policy)."""
  container = {
      'name': container_name, 'image': image, 'command': list(command),
      'env': _pod_ip_env(),
      'ports': [{'name': port_name, 'containerPort': port,
                 'protocol': 'TCP'}],
  }
  resources = _resources(None if cpus is None else str(cpus), memory)
  if resources:
    container['resources'] = resources
  mounts = _volume_mount(volume_claim, model_dir)
  if mounts:
    container['volumeMounts'] = mounts
  pod_spec = dict(first or {})
  pod_spec.update({'terminationGracePeriodSeconds': grace_secs,
                   'containers': [container]})
  if volume_claim:
    pod_spec['volumes'] = _volume(volume_claim)
  return pod_spec


def _metadata(name: str, namespace: Optional[str]) -> Dict[str, Any]:
  metadata = {'name': name, 'labels': {JOB_LABEL: name}}
  if namespace:
    metadata['namespace'] = namespace
  return metadata


def headless_service(*, name: str, namespace: Optional[str], port: int
                     ) -> Dict[str, Any]:
  """The Service that gives each pod of job `name` the DNS name
  `<name>-<i>.<name>`: headless (no virtual IP, the name resolves to the
  pod), selecting the job's pods, publishing pods before they are ready
  (TensorFlow's servers come up in any order and dial each other while
  starting; there is no readiness probe to wait for)."""
  return {
      'apiVersion': 'v1', 'kind': 'Service',
      'metadata': _metadata(name, namespace),
      'spec': {'clusterIP': 'None', 'publishNotReadyAddresses': True,
               'selector': {JOB_LABEL: name},
               'ports': [{'name': 'tf', 'port': port, 'targetPort': port,
                          'protocol': 'TCP'}]},
  }


def indexed_job(*, name: str, namespace: Optional[str], image: str,
                command: Sequence[str], model_dir: str, workers: int,
                ps: int, chief: bool, evaluator: bool, port: int,
                volume_claim: Optional[str], cpus: Optional[str] = None,
                memory: Optional[str] = None, grace_secs: int = 60,
                max_restarts: int = 0, success_policy: bool = True,
                domain: str = '') -> Dict[str, Any]:
  """The Indexed Job running every task of the cluster (see the module
  docstring for what each field is for).

  Args:
    command: what each task runs (`python -m estimator_rt.main ...`), the
      same for every task.
    domain: appended to the pods' names `<name>-<i>.<name>` in TF_CONFIG
      ('' relies on the pods' DNS search path, which covers the namespace).
  """
  keys = task_keys(workers=workers, ps=ps, chief=chief, evaluator=evaluator)
  entry = POD_ENTRY + _roles(workers=workers, ps=ps, chief=chief,
                             evaluator=evaluator) + [
      f'--job_name={name}', f'--service={name}', f'--port={port}'] + (
          [f'--domain={domain}'] if domain else []) + ['--'] + list(command)
  pod_spec = _pod_spec(
      container_name=CONTAINER_NAME, command=entry, image=image,
      port_name='tf', port=port, cpus=cpus, memory=memory,
      volume_claim=volume_claim, model_dir=model_dir, grace_secs=grace_secs,
      first={'subdomain': name, 'restartPolicy': 'Never'})
  spec = {
      'completionMode': 'Indexed', 'completions': len(keys),
      'parallelism': len(keys), 'backoffLimit': max_restarts,
      'podFailurePolicy': {'rules': [
          {'action': 'FailJob',
           'onExitCodes': {'containerName': CONTAINER_NAME, 'operator': 'In',
                           'values': [BAD_INPUT_EXIT_CODE]}},
          {'action': 'Ignore',
           'onExitCodes': {'containerName': CONTAINER_NAME, 'operator': 'In',
                           'values': [PREEMPTED_EXIT_CODE]}},
          {'action': 'Ignore',
           'onPodConditions': [{'type': 'DisruptionTarget',
                                'status': 'True'}]},
      ]},
      'template': {'metadata': {'labels': {JOB_LABEL: name}},
                   'spec': pod_spec},
  }
  if success_policy:
    indexes = [0] + ([len(keys) - 1] if evaluator else [])
    spec['successPolicy'] = {'rules': [
        {'succeededIndexes': ','.join(str(i) for i in indexes)}]}
  return {'apiVersion': 'batch/v1', 'kind': 'Job',
          'metadata': _metadata(name, namespace), 'spec': spec}


def tf_job(*, name: str, namespace: Optional[str], image: str,
           command: Sequence[str], model_dir: str, workers: int, ps: int,
           chief: bool, evaluator: bool, port: int,
           volume_claim: Optional[str], cpus: Optional[str] = None,
           memory: Optional[str] = None, grace_secs: int = 60,
           max_restarts: int = 0, max_preemptions: int = 100
           ) -> Dict[str, Any]:
  """A Kubeflow TFJob (kubeflow.org/v1) with one replica spec per role
  (see the module docstring for the operator's behaviour)."""
  counts = {'chief': int(chief), 'worker': workers, 'ps': ps,
            'evaluator': int(evaluator)}
  # Every role runs the same pod; the operator tells them apart.
  pod_spec = _pod_spec(
      container_name=TFJOB_CONTAINER_NAME,
      command=POD_ENTRY + ['--given_tf_config', '--'] + list(command),
      image=image, port_name=TFJOB_PORT_NAME, port=port, cpus=cpus,
      memory=memory, volume_claim=volume_claim, model_dir=model_dir,
      grace_secs=grace_secs)
  replica_specs = {}
  for job in JOB_ORDER:
    if not counts[job]:
      continue
    replica_specs[TFJOB_REPLICA_TYPES[job]] = {
        'replicas': counts[job], 'restartPolicy': 'ExitCode',
        'template': {'metadata': {'labels': {JOB_LABEL: name}},
                     'spec': pod_spec}}
  return {
      'apiVersion': 'kubeflow.org/v1', 'kind': 'TFJob',
      'metadata': _metadata(name, namespace),
      'spec': {'runPolicy': {'backoffLimit': max_restarts + max_preemptions,
                             'cleanPodPolicy': 'None'},
               'tfReplicaSpecs': replica_specs},
  }


# ------------------------------------------------------------------ YAML
# A small emitter for the dicts above (str, int, bool, None, lists, dicts),
# so rendering needs nothing but the standard library. A string is written
# plain only when YAML would read it back as the same string; otherwise as
# a JSON string, which is valid YAML (a double-quoted scalar).
_PLAIN = re.compile(r'^(-{1,2}[A-Za-z_]|[A-Za-z_/])[-A-Za-z0-9_./=:]*$')
_YAML_WORDS = {'y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null',
               '~'}


def _scalar(value: Any) -> str:
  if value is None:
    return 'null'
  if isinstance(value, bool):
    return 'true' if value else 'false'
  if isinstance(value, int):
    return str(value)
  if not isinstance(value, str):
    raise TypeError(f'cannot write {type(value).__name__} {value!r} as YAML')
  if (_PLAIN.match(value) and value.lower() not in _YAML_WORDS and
      ': ' not in value and not value.endswith(':')):
    return value
  return json.dumps(value)


def _lines(value: Any, indent: str) -> List[str]:
  """`value` (a dict or list) as YAML block lines at `indent`."""
  lines = []
  if isinstance(value, dict):
    for key, item in value.items():
      key = _scalar(key)
      if isinstance(item, (dict, list)) and item:
        lines.append(f'{indent}{key}:')
        lines.extend(_lines(item, indent + '  ' if isinstance(item, dict)
                            else indent))
      else:
        lines.append(f'{indent}{key}: {_empty_or_scalar(item)}')
    return lines
  for item in value:
    if isinstance(item, (dict, list)) and item:
      nested = _lines(item, indent + '  ')
      # The first line of the item goes on the dash's line.
      lines.append(f'{indent}- {nested[0].lstrip()}')
      lines.extend(nested[1:])
    else:
      lines.append(f'{indent}- {_empty_or_scalar(item)}')
  return lines


def _empty_or_scalar(value: Any) -> str:
  if isinstance(value, dict):
    return '{}'
  if isinstance(value, list):
    return '[]'
  return _scalar(value)


def to_yaml(documents: Sequence[Dict[str, Any]]) -> str:
  """`documents` as one YAML stream, each starting with `---`."""
  return ''.join('---\n' + '\n'.join(_lines(doc, '')) + '\n'
                 for doc in documents)
