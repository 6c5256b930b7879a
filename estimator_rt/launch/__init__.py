"""Launchers: `python -m` entry points that start and watch a cluster's
tasks, and the parts they share.

Entry points:

  local          every task a local process on loopback ports, restarted
                 by exit code (`supervisor`);
  local_servers  `start` / `stop` long-running `run_server` processes on
                 this machine, for standalone clients;
  slurm          the task side of a Slurm job step;
  kubernetes     the task side of a Kubernetes pod;
  ray_job        every task a Ray actor, restarted as `local` does;
  ray_train      multi_worker_mirrored through Ray Train's
                 TensorflowTrainer.

Shared parts: role layout (`layout`), exit-code policy (`exit_policy`),
flags (`arguments`), supervision (`supervisor`, `local_processes`,
`ray_cluster`), a local Ray instance's start (`ray_local`), stopping
processes known by pid (`stopping`). Nothing here imports TensorFlow at
the top: launchers start and watch the binary, they do not run it. The
one exception is `ray_train`'s training function, which runs the runtime
inside each Ray Train worker (Ray Train owns those processes).
"""
