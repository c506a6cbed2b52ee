"""A Spark standalone cluster (one master, one worker) on loopback, from the pyspark package's
own ``spark-class``: what the cluster test and the benchmark run the example on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import free_port, port_accepts


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_env(workdir: Path) -> dict[str, str]:
    return dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1",
                PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                SPARK_WORKER_DIR=str(workdir / "work"), SPARK_LOG_DIR=str(workdir / "logs"))


class StandaloneCluster:
    """``with StandaloneCluster(tmp) as cluster: cluster.submit(job, args)``."""

    def __init__(self, workdir: Path, cores: int = 2, memory: str = "1g") -> None:
        self.workdir = workdir
        self.port = free_port()
        self.cores, self.memory = cores, memory
        self.env = spark_env(workdir)
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, *args: str) -> None:
        with open(self.workdir / f"{name}.log", "wb") as log:  # the child keeps its own descriptor
            self.procs.append(subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=self.env,
                                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def __enter__(self) -> StandaloneCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(free_port()))
        deadline = time.monotonic() + 60
        while not port_accepts("127.0.0.1", self.port, timeout=0.5):
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                raise RuntimeError("spark master did not start:\n" + (self.workdir / "master.log").read_text()[-2000:])
            time.sleep(0.2)
        self._start("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(free_port()),
                    self.master_url)
        return self

    def submit(self, job: str, args: list[str], conf: dict[str, str] | None = None,
               timeout: float = 400) -> subprocess.CompletedProcess[str]:
        settings = {"spark.executor.memory": "512m", "spark.sql.shuffle.partitions": "2", **(conf or {})}
        command = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        return subprocess.run([*command, job, *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
