"""Kubernetes: the manifests scripts/kubernetes/render.py writes, and the
pod side (estimator_rt.launch.kubernetes) run for real as local processes.

No Kubernetes cluster runs here. What is checked instead:

  - The rendered Indexed Job and headless Service validate offline against
    Kubernetes' own OpenAPI schemas (PyPI `kubernetes-validate`, strict:
    unknown fields fail), and the TFJob against the TFJob CRD's schema from
    Kubeflow's training-operator v1.9.0 (vendored in tests/data/kubernetes/,
    see its README), with `jsonschema`.
  - The pod side, given the environment a pod of the rendered Job has
    (JOB_COMPLETION_INDEX, POD_IP from the downward API, the other pods'
    names resolving through DNS), trains a parameter-server cluster to the
    end: each "pod" is a process with its own 127.0.0.x address, all on the
    same port as in Kubernetes, and the pods' names `<job>-<i>.<service>`
    resolve to those addresses through /etc/hosts lines this test adds and
    removes (gRPC and the bind guard resolve them like any other name).
    Each process runs the exact command of the rendered Job's container.
"""

import argparse
import functools
import gzip
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

import jsonschema
import kubernetes_validate
import pytest
import yaml

import _cluster
from estimator_rt.core import summaries
from estimator_rt.launch import kubernetes_manifests as manifests
from estimator_rt.launch import layout

RENDER = os.path.join(_cluster.REPO_ROOT, 'scripts', 'kubernetes', 'render.py')
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                    'kubernetes')
TFJOB_CRD = os.path.join(DATA, 'kubeflow.org_tfjobs.yaml.gz')
HOSTS_FILE = '/etc/hosts'

MAX_STEPS = 60
SAVE_EVERY = 30
# Kubernetes versions the Job is checked against: the first where its
# successPolicy is GA, and the newest kubernetes-validate ships.
K8S_VERSIONS = ('1.33', kubernetes_validate.latest_version())


def _render(*args, check=True):
  result = subprocess.run([sys.executable, RENDER, *args],
                          capture_output=True, text=True, timeout=60,
                          check=False)
  if check:
    assert result.returncode == 0, result.stderr
    return list(yaml.safe_load_all(result.stdout))
  return result


PS_ROLES = ('--workers', '2', '--ps', '1', '--chief', '--evaluator')
IMAGE_AND_DIR = ('--image', 'registry.example/estimator-rt:1',
                 '--model_dir', '/mnt/shared/run1',
                 '--volume_claim', 'shared-models')
COMMAND = ('--', 'python', '-m', 'estimator_rt.main',
           '--distribution_strategy=parameter_server', '--max_steps=1000',
           '--params={"batch_size": 64}')


# ------------------------------------------------------- the manifests
def test_indexed_job_and_service_validate_against_kubernetes_schemas():
  service, job = _render(*PS_ROLES, *IMAGE_AND_DIR, '--namespace', 'ml',
                         '--cpus', '2', '--memory', '4Gi', *COMMAND)
  for version in K8S_VERSIONS:
    for document in (service, job):
      kubernetes_validate.validate(document, version, strict=True)

  assert service['spec']['clusterIP'] == 'None'
  assert service['spec']['selector'] == job['spec']['template']['metadata'][
      'labels']
  spec = job['spec']
  assert (spec['completionMode'], spec['completions'], spec['parallelism']) == (
      'Indexed', 5, 5)
  pod = spec['template']['spec']
  assert pod['subdomain'] == service['metadata']['name'] == 'estimator-rt'
  assert pod['restartPolicy'] == 'Never'
  rules = spec['podFailurePolicy']['rules']
  assert [(r['action'], r.get('onExitCodes', {}).get('values')) for r in
          rules] == [('FailJob', [2]), ('Ignore', [143]), ('Ignore', None)]
  # The chief (index 0) and the evaluator (the last index) decide success.
  assert spec['successPolicy'] == {'rules': [{'succeededIndexes': '0,4'}]}
  container, = pod['containers']
  assert container['command'][:3] == ['python', '-m',
                                      'estimator_rt.launch.kubernetes']
  assert '--domain=.ml.svc' in container['command']
  # The user's command, JSON argument intact, model_dir added.
  tail = container['command'][container['command'].index('--') + 1:]
  assert tail == list(COMMAND[1:]) + ['--model_dir=/mnt/shared/run1']
  assert container['volumeMounts'] == [{'name': 'model-dir',
                                        'mountPath': '/mnt/shared/run1'}]
  assert container['env'][0]['valueFrom'] == {
      'fieldRef': {'fieldPath': 'status.podIP'}}


def test_strict_validation_catches_what_an_older_kubernetes_lacks():
  """The schemas are really applied: Kubernetes 1.29 has no Job
  successPolicy, and strict validation says so; without it the Job
  validates there too."""
  _, job = _render(*PS_ROLES, *IMAGE_AND_DIR, *COMMAND)
  with pytest.raises(kubernetes_validate.ValidationError,
                     match='successPolicy'):
    kubernetes_validate.validate(job, '1.29', strict=True)
  _, job = _render(*PS_ROLES, *IMAGE_AND_DIR, '--no_success_policy',
                   *COMMAND)
  kubernetes_validate.validate(job, '1.29', strict=True)


def _refusing_unknown_fields(schema):
  """`schema` with unknown fields refused wherever it lists the fields,
  as the API server's strict field validation (kubectl's default since
  Kubernetes 1.27) refuses them for a structural CRD schema."""
  if isinstance(schema, list):
    return [_refusing_unknown_fields(item) for item in schema]
  if not isinstance(schema, dict):
    return schema
  strict = {key: _refusing_unknown_fields(value)
            for key, value in schema.items()}
  if ('properties' in schema and 'additionalProperties' not in schema and
      not schema.get('x-kubernetes-preserve-unknown-fields')):
    strict['additionalProperties'] = False
  return strict


@functools.lru_cache(maxsize=None)
def _tfjob_schema():
  with gzip.open(TFJOB_CRD, 'rt') as f:
    crd = yaml.load(f, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))
  version, = [v for v in crd['spec']['versions'] if v['name'] == 'v1']
  return _refusing_unknown_fields(version['schema']['openAPIV3Schema'])


def test_tfjob_validates_against_the_tfjob_crd_schema():
  tfjob, = _render(*PS_ROLES, *IMAGE_AND_DIR, '--tfjob', *COMMAND)
  schema = _tfjob_schema()
  jsonschema.validate(tfjob, schema)
  specs = tfjob['spec']['tfReplicaSpecs']
  assert {k: v['replicas'] for k, v in specs.items()} == {
      'Chief': 1, 'Worker': 2, 'PS': 1, 'Evaluator': 1}
  for spec in specs.values():
    assert spec['restartPolicy'] == 'ExitCode'
    container, = spec['template']['spec']['containers']
    # The operator reads the port of this container, by these names.
    assert container['name'] == 'tensorflow'
    assert container['ports'][0]['name'] == 'tfjob-port'
    assert '--given_tf_config' in container['command']
  # The schema can fail: a misspelt field, a count that is no integer.
  specs['PS']['restartPolcy'] = specs['PS'].pop('restartPolicy')
  with pytest.raises(jsonschema.ValidationError, match='restartPolcy'):
    jsonschema.validate(tfjob, schema)
  specs['PS']['restartPolicy'] = specs['PS'].pop('restartPolcy')
  specs['Worker']['replicas'] = '2'
  with pytest.raises(jsonschema.ValidationError, match="'2' is not of type"):
    jsonschema.validate(tfjob, schema)


EXAMPLES_DIR = os.path.join(_cluster.REPO_ROOT, 'scripts', 'kubernetes',
                            'examples')
_EXAMPLE_COMMAND = ('--', 'python', '-m', 'estimator_rt.main',
                    '--model_fn=model_fns.mlp:model_fn',
                    '--input_fn=input_fns.digits:train_input_fn',
                    '--eval_input_fn=input_fns.digits:eval_input_fn',
                    '--max_steps=20000', '--save_checkpoints_steps=1000',
                    '--throttle_secs=0')
_PS_EXAMPLE = ('--workers', '2', '--ps', '1', '--chief', '--evaluator',
               '--image', 'registry.example/estimator-rt:latest',
               '--model_dir', '/mnt/models/ps_run', '--volume_claim', 'models',
               '--name', 'ps-run', '--cpus', '2', '--memory', '4Gi')
# scripts/kubernetes/examples/: each file and the render flags that write it
# (the same as in that directory's README).
EXAMPLES = {
    'parameter_server_job.yaml': _PS_EXAMPLE + _EXAMPLE_COMMAND[:4] + (
        '--distribution_strategy=parameter_server',) + _EXAMPLE_COMMAND[4:],
    'multi_worker_mirrored_job.yaml': (
        '--workers', '2', '--evaluator',
        '--image', 'registry.example/estimator-rt:latest',
        '--model_dir', '/mnt/models/mwms_run', '--volume_claim', 'models',
        '--name', 'mwms-run', '--cpus', '2', '--memory', '4Gi',
        '--max_restarts', '6') + _EXAMPLE_COMMAND[:4] + (
            '--distribution_strategy=multi_worker_mirrored',) +
        _EXAMPLE_COMMAND[4:],
    'parameter_server_tfjob.yaml': _PS_EXAMPLE + (
        '--namespace', 'ml', '--tfjob') + _EXAMPLE_COMMAND[:4] + (
            '--distribution_strategy=parameter_server',) +
        _EXAMPLE_COMMAND[4:],
}


@pytest.mark.parametrize('example', sorted(EXAMPLES))
def test_example_manifests_are_what_render_writes_and_validate(example):
  with open(os.path.join(EXAMPLES_DIR, example)) as f:
    text = f.read()
  result = _render(*EXAMPLES[example], check=False)
  assert result.returncode == 0, result.stderr
  assert result.stdout == text, (
      f'{example} is stale: re-render it with the flags in '
      'scripts/kubernetes/examples/README.md')
  for document in yaml.safe_load_all(text):
    if document['kind'] == 'TFJob':
      jsonschema.validate(document, _tfjob_schema())
    else:
      kubernetes_validate.validate(document, K8S_VERSIONS[-1], strict=True)


def test_yaml_reads_back_as_what_was_rendered():
  """The stdlib-only YAML writer: awkward strings (YAML words, numbers,
  ': ', quotes, '#', leading dashes) read back unchanged."""
  awkward = ['yes', 'No', 'null', '~', '2', '1.5', '.5', '0x1F', '1:20',
             'a: b', 'a #b', '"q"', "'q'", '--', '-', '--flag=a b',
             '--params={"a": [1, 2]}', '', ' lead', 'trail ', '*ref',
             '&anchor', '!tag', '%x', '@x', '`x', 'a\nb', 'é', '[x]',
             '{x}', '>', '|', '?', 'on', 'Off', 'y', '-1', '+1', '.inf',
             '.NaN', '2026-11-23', 'True']
  document = {'strings': awkward, 'nested': [{'a': [], 'b': {}},
                                             [1, True, None]],
              'key': 'value'}
  assert yaml.safe_load(manifests.to_yaml([document])) == document


@pytest.mark.parametrize('flags, message', [
    (('--workers', '0', '--ps', '1', *IMAGE_AND_DIR), 'at least one worker'),
    (('--workers', '-1', *IMAGE_AND_DIR), 'must be 0 or more'),
    (('--workers', '1', '--ps', '1', '--image', 'i', '--model_dir',
      '/mnt/m'), '--volume_claim'),
    (('--workers', '1', *IMAGE_AND_DIR, '--name', 'Bad_Name'), '--name='),
    (('--workers', '1', *IMAGE_AND_DIR, '--memory', '4 GB'), '--memory='),
    (('--workers', '1', *IMAGE_AND_DIR, '--port', '0'), '--port=0'),
    (('--workers', 'two', *IMAGE_AND_DIR), '--workers'),
])
def test_render_refuses_bad_flags_with_one_line(flags, message):
  result = _render(*flags, *COMMAND, check=False)
  assert result.returncode == 2, result
  assert result.stdout == ''
  lines = result.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith('error: '), result.stderr
  assert message in lines[0], lines[0]


def test_render_refuses_a_second_model_dir():
  result = _render('--workers', '1', *IMAGE_AND_DIR, *COMMAND,
                   '--model_dir=/tmp/elsewhere', check=False)
  assert result.returncode == 2
  assert result.stderr.count('\n') == 1 and 'give one model_dir' in (
      result.stderr)


@pytest.mark.parametrize('env, flags, message', [
    ({'JOB_COMPLETION_INDEX': '5'}, (),
     'JOB_COMPLETION_INDEX=5 is out of range for the 4 tasks'),
    ({'JOB_COMPLETION_INDEX': 'x'}, (), "JOB_COMPLETION_INDEX='x' is not"),
    ({}, (), 'JOB_COMPLETION_INDEX is not set'),
    ({}, ('--given_tf_config',), 'TF_CONFIG=\'\' has no "task"'),
    ({'JOB_COMPLETION_INDEX': '0'}, ('--ps=-1',), '--ps=-1'),
    ({'JOB_COMPLETION_INDEX': '0'}, ('--', '/no/such/python'),
     "cannot run '/no/such/python': No such file or directory"),
])
def test_pod_side_refuses_what_makes_no_task_with_one_line(env, flags,
                                                           message):
  """Exit 2, which the Job's podFailurePolicy turns into a failed job
  instead of a pod recreated over and over; the command never runs."""
  environment = _cluster.task_env()  # Without TF_CONFIG.
  environment.pop('JOB_COMPLETION_INDEX', None)
  environment.update(env)
  result = subprocess.run(
      [sys.executable, '-m', 'estimator_rt.launch.kubernetes', '--workers=2',
       '--ps=1', '--chief', '--job_name=j', '--service=j', *flags, '--',
       sys.executable, '-c', 'print("ran")'],
      env=environment, capture_output=True, text=True, timeout=60,
      check=False)
  assert result.returncode == 2, result
  assert 'ran' not in result.stdout
  lines = result.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith('error: '), result.stderr
  assert message in lines[0], lines[0]


# ------------------------------------------------------- the pods, for real
_HOSTS_TAG = '# estimator_rt test_kubernetes pid '


def _rewrite_hosts_without(unwanted):
  """Rewrites /etc/hosts in place (it may be a mount point) without the
  lines `unwanted(line)` picks."""
  with open(HOSTS_FILE) as f:
    lines = f.readlines()
  kept = [line for line in lines if not unwanted(line.rstrip('\n'))]
  if kept != lines:
    with open(HOSTS_FILE, 'w') as f:
      f.writelines(kept)


def _left_by_a_dead_run(line):
  if _HOSTS_TAG not in line:
    return False
  pid = int(line.rsplit(_HOSTS_TAG, 1)[1])
  return not os.path.exists(f'/proc/{pid}')


@pytest.fixture
def pod_names():
  """Adds `name -> address` lines to /etc/hosts, removes them afterwards
  (only those lines). Each line is tagged with this process id, so lines
  a killed run left behind are removed the next time."""
  _rewrite_hosts_without(_left_by_a_dead_run)
  added = set()

  def add(mapping):
    lines = [f'{address} {name}  {_HOSTS_TAG}{os.getpid()}'
             for name, address in mapping.items()]
    with open(HOSTS_FILE, 'a') as f:
      f.write(''.join(line + '\n' for line in lines))
    added.update(lines)

  yield add
  _rewrite_hosts_without(lambda line: line in added)


def _port_free_on_all(port, addresses):
  for address in addresses:
    with socket.socket() as s:
      try:
        s.bind((address, port))
      except OSError:
        return False
  return True


def _common_free_port(addresses):
  for _ in range(50):
    port = random.randint(20000, 60000)
    if _port_free_on_all(port, addresses):
      return port
  raise AssertionError(f'no port free on all of {addresses}')


class Pods:
  """The pods of one rendered Job, as local processes (see the module
  docstring): pod i runs the Job's container command with
  JOB_COMPLETION_INDEX=i and POD_IP=127.0.0.(10+i)."""

  def __init__(self, tmp_path, add_names, *, name, role_flags, binary_flags):
    self.tmp_path = tmp_path
    self.count = len(layout.task_keys(**_role_counts(role_flags)))
    self.ips = [f'127.0.0.{10 + i}' for i in range(self.count)]
    self.port = _common_free_port(self.ips)
    self.service, self.job = _render(
        *role_flags, '--image', 'unused', '--model_dir',
        str(tmp_path / 'model'), '--volume_claim', 'pvc', '--name', name,
        '--port', str(self.port), '--', 'python', '-m', 'estimator_rt.main',
        *binary_flags)
    assert self.job['spec']['completions'] == self.count
    self.tfjob, = _render(
        *role_flags, '--image', 'unused', '--model_dir',
        str(tmp_path / 'model'), '--volume_claim', 'pvc', '--name', name,
        '--namespace', 'ns', '--port', str(self.port), '--tfjob', '--',
        'python', '-m', 'estimator_rt.main', *binary_flags)
    container, = self.job['spec']['template']['spec']['containers']
    # The image's `python` is this interpreter here.
    self.command = [sys.executable if arg == 'python' else arg
                    for arg in container['command']]
    # What Kubernetes does for the headless Service: <job>-<i>.<service>
    # resolves to pod i's IP.
    self.subdomain = self.job['spec']['template']['spec']['subdomain']
    assert self.subdomain == self.service['metadata']['name']
    add_names({self.host(i): ip for i, ip in enumerate(self.ips)})
    self.processes = {}
    self._logs = {}

  def host(self, index):
    return f'{self.job["metadata"]["name"]}-{index}.{self.subdomain}'

  def start(self, order, *, env=None):
    """Starts pod `index` for each index in `order` (again: a new pod in
    its place, as Kubernetes recreates one); `env(index)`: more of its
    environment."""
    for index in order:
      attempts = self._logs.setdefault(index, [])
      log = open(self.tmp_path / f'pod_{index}_{len(attempts)}.log', 'w+')
      attempts.append(log)
      environment = _cluster.task_env({'JOB_COMPLETION_INDEX': str(index),
                                       'POD_IP': self.ips[index]})
      environment.update(env(index) if env else {})
      self.processes[index] = subprocess.Popen(
          self.command, env=environment, stdout=log,
          stderr=subprocess.STDOUT, cwd=str(self.tmp_path),
          start_new_session=True)

  def wait(self, indexes=None, *, secs):
    """Each pod's exit code (None: still running after `secs` in all)."""
    deadline = time.time() + secs
    codes = {}
    for index in sorted(self.processes if indexes is None else indexes):
      try:
        codes[index] = self.processes[index].wait(
            timeout=max(1, deadline - time.time()))
      except subprocess.TimeoutExpired:
        codes[index] = None
    return codes

  def kill(self):
    for process in self.processes.values():
      if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

  def output(self, index, attempt=-1):
    log = self._logs[index][attempt]
    log.flush()
    log.seek(0)
    return log.read()

  def tails(self):
    return '\n'.join(f'--- pod {i}\n{self.output(i)[-3000:]}'
                     for i in sorted(self._logs))

  def close(self):
    self.kill()
    for attempts in self._logs.values():
      for log in attempts:
        log.close()


def _role_counts(role_flags):
  parser = argparse.ArgumentParser()
  layout.add_role_flags(parser)
  return vars(parser.parse_args(role_flags))


@pytest.fixture
def pods(tmp_path, pod_names):
  """Makes `Pods` (each killed at the end, its host names removed)."""
  made = []

  def make(**kwargs):
    made.append(Pods(tmp_path, pod_names, **kwargs))
    return made[-1]

  yield make
  for group in made:
    group.close()


def _check_pods_finished(group, roles, *, max_steps=MAX_STEPS):
  """Every pod exited 0, with every output line prefixed by its role,
  naming itself by its pod's stable name; the checkpoint at max_steps and
  the evaluator's last result at max_steps."""
  codes = group.wait(secs=240)
  assert codes == {i: 0 for i in range(group.count)}, group.tails()
  for index, role in roles.items():
    lines = [l for l in group.output(index).splitlines() if l.strip()]
    # Every line carries the role, and the role is the index's.
    assert lines and all(l.startswith(f'[{role}] ') for l in lines), (
        index, lines[:5])
    # TF_CONFIG named the pods by their stable names.
    running = [l for l in lines if f'Running as {role} ' in l]
    assert len(running) == 1, group.output(index)[-3000:]
    assert f' at {group.host(index)}:{group.port} in a cluster' in (
        running[0]), running[0]
  model_dir = str(group.tmp_path / 'model')
  assert _cluster.checkpoint_steps(model_dir)[-1] == max_steps
  steps = [step for step, _ in summaries.read_scalars(
      os.path.join(model_dir, 'eval')).get('loss', [])]
  assert steps and steps[-1] == max_steps, steps


def _check_listens_on_pod_ip(group, index):
  """The server's log line: it listened on its pod IP and no wildcard
  (the other 'pods' share this machine's port, so their addresses show
  too; in Kubernetes each pod has its own network)."""
  line, = [l for l in group.output(index).splitlines()
           if 'listening on ' in l]
  listening = line.split('listening on ', 1)[1]
  assert f'{group.ips[index]}:{group.port}' in listening, line
  assert '0.0.0.0' not in listening and '[::]' not in listening, line


def _tiny_binary_flags(module, *, max_steps=MAX_STEPS, save_every=SAVE_EVERY):
  return _cluster.tiny_flags(module) + [
      f'--max_steps={max_steps}', f'--save_checkpoints_steps={save_every}',
      '--throttle_secs=0', '--steps_per_loop=10']


needs_hosts_file = pytest.mark.skipif(
    not os.access(HOSTS_FILE, os.W_OK),
    reason='adds lines to /etc/hosts (needs root)')


@needs_hosts_file
def test_pods_of_the_rendered_job_train_a_parameter_server_cluster(
    tmp_path, pods):
  module = _cluster.write_tiny_model(tmp_path)
  group = pods(name=f'ert-ps-{os.getpid()}',
               role_flags=['--workers=1', '--ps=1', '--chief', '--evaluator'],
               binary_flags=_tiny_binary_flags(module) + [
                   '--distribution_strategy=parameter_server'])
  group.start([2, 1, 3, 0])  # Pods start in any order; the chief waits.
  _check_pods_finished(group, {0: 'chief:0', 1: 'worker:0', 2: 'ps:0',
                               3: 'evaluator:0'})
  for index in (1, 2):  # The worker and ps servers say where they listen.
    _check_listens_on_pod_ip(group, index)
  assert 'The chief finished training; ps:0 exits.' in group.output(2)


@needs_hosts_file
def test_pods_of_the_rendered_job_train_multi_worker_mirrored(tmp_path, pods):
  module = _cluster.write_tiny_model(tmp_path)
  group = pods(name=f'ert-mwms-{os.getpid()}',
               role_flags=['--workers=2', '--evaluator'],
               binary_flags=_tiny_binary_flags(module) + [
                   '--distribution_strategy=multi_worker_mirrored'])
  group.start([2, 1, 0])
  _check_pods_finished(group, {0: 'worker:0', 1: 'worker:1',
                               2: 'evaluator:0'})
  assert 'Role: chief: trains with multi_worker_mirrored' in group.output(0)


@needs_hosts_file
def test_a_preempted_pod_saves_and_its_recreated_pods_resume(tmp_path, pods):
  """SIGTERM to the pod's entry process (PID 1 in a container, the one the
  kubelet signals) reaches the binary: the PS chief saves at the end of its
  loop in flight and exits 143, its ps and worker exit 143 too, and each
  pod's exit code is its binary's. Pods 0-2 recreated (as the Job's
  podFailurePolicy does for 143) resume from that step and finish; the
  evaluator pod keeps running throughout."""
  max_steps = 1000
  module = _cluster.write_tiny_model(tmp_path)
  group = pods(name=f'ert-pre-{os.getpid()}',
               role_flags=['--workers=1', '--ps=1', '--chief', '--evaluator'],
               binary_flags=_tiny_binary_flags(
                   module, max_steps=max_steps, save_every=50) + [
                       '--distribution_strategy=parameter_server'])
  group.start([2, 1, 3, 0])
  model_dir = str(tmp_path / 'model')
  _cluster.wait_for(lambda: os.path.isdir(model_dir) and
                    _cluster.checkpoint_steps(model_dir),
                    timeout=180, what='the first checkpoint')
  group.processes[0].send_signal(signal.SIGTERM)
  codes = group.wait([0, 1, 2], secs=120)
  assert codes == {0: 143, 1: 143, 2: 143}, group.tails()
  saved = re.findall(r'\[chief:0\] .*Preempted \(SIGTERM\) at global step '
                     r'(\d+): checkpoint saved', group.output(0))
  assert len(saved) == 1, group.output(0)[-3000:]
  step = int(saved[0])
  assert 0 < step < max_steps and step in _cluster.checkpoint_steps(
      model_dir)
  assert group.processes[3].poll() is None, group.output(3)[-3000:]

  group.start([2, 1, 0])
  _check_pods_finished(group, {0: 'chief:0', 1: 'worker:0', 2: 'ps:0',
                               3: 'evaluator:0'}, max_steps=max_steps)
  assert f'Training from global step {step} up to {max_steps}' in (
      group.output(0)), group.output(0)[-3000:]


def _operator_tf_config(tfjob, job, index):
  """The TF_CONFIG Kubeflow's training-operator v1.9 writes into the pod of
  `job`:`index` (pkg/controller.v1/tensorflow/tensorflow.go, genClusterSpec
  and genTFConfigJSONStr): every replica type, lower-cased, at
  `<tfjob>-<type>-<i>.<namespace>.svc:<the tfjob-port>`, plus its legacy
  "environment" field."""
  name, namespace = tfjob['metadata']['name'], tfjob['metadata']['namespace']
  cluster = {}
  for replica_type, spec in tfjob['spec']['tfReplicaSpecs'].items():
    container, = spec['template']['spec']['containers']
    port, = [p['containerPort'] for p in container['ports']
             if p['name'] == 'tfjob-port']
    rtype = replica_type.lower()
    cluster[rtype] = [f'{name}-{rtype}-{i}.{namespace}.svc:{port}'
                      for i in range(spec['replicas'])]
  return json.dumps({'cluster': cluster,
                     'task': {'type': job, 'index': index},
                     'environment': 'cloud'})


@needs_hosts_file
def test_tfjob_pods_train_with_the_operators_tf_config(tmp_path, pods,
                                                       pod_names):
  """The TFJob's container command, given TF_CONFIG as the operator writes
  it (and its service names resolving to each pod's IP), trains
  multi_worker_mirrored with an evaluator to the end. Only TF_CONFIG is
  written here as the operator would; no operator runs."""
  module = _cluster.write_tiny_model(tmp_path)
  group = pods(name=f'ert-tfjob-{os.getpid()}',
               role_flags=['--workers=2', '--evaluator'],
               binary_flags=_tiny_binary_flags(module) + [
                   '--distribution_strategy=multi_worker_mirrored'])
  tfjob = group.tfjob
  container, = tfjob['spec']['tfReplicaSpecs']['Worker']['template']['spec'][
      'containers']
  group.command = [sys.executable if arg == 'python' else arg
                   for arg in container['command']]
  tasks = {0: ('worker', 0), 1: ('worker', 1), 2: ('evaluator', 0)}
  configs = {i: _operator_tf_config(tfjob, *task) for i, task in tasks.items()}
  pod_names({json.loads(configs[i])['cluster'][job][index].rsplit(':', 1)[0]:
             group.ips[i] for i, (job, index) in tasks.items()})
  # No JOB_COMPLETION_INDEX in a TFJob's pods.
  group.start([2, 1, 0], env=lambda i: {'TF_CONFIG': configs[i],
                                        'JOB_COMPLETION_INDEX': ''})
  codes = group.wait(secs=240)
  assert codes == {0: 0, 1: 0, 2: 0}, group.tails()
  for index, (job, task_index) in tasks.items():
    role = f'{job}:{task_index}'
    lines = [l for l in group.output(index).splitlines() if l.strip()]
    assert lines and all(l.startswith(f'[{role}] ') for l in lines), lines[:5]
  assert _cluster.checkpoint_steps(str(tmp_path / 'model'))[-1] == MAX_STEPS
  steps = [step for step, _ in summaries.read_scalars(
      str(tmp_path / 'model' / 'eval')).get('loss', [])]
  assert steps and steps[-1] == MAX_STEPS, steps
