"""The test PostgreSQL cluster shut down and started again on the same port and data directory
(the chaos suite's PostgreSQL scenario relies on it): committed rows are kept."""

from __future__ import annotations

import psycopg
import pytest

from tests.services.postgres import PostgresServer


def test_a_restarted_cluster_keeps_its_port_and_data() -> None:
    with PostgresServer() as server:
        url = server.url()
        with server.connect() as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (7)")
        held = server.connect()
        server.shut_down()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=1)
        with pytest.raises(psycopg.OperationalError):
            held.execute("SELECT 1")  # the fast shutdown closed it
        assert server.start_again() > 0
        assert server.url() == url
        with psycopg.connect(url, connect_timeout=5) as conn:
            assert conn.execute("SELECT n FROM kept").fetchall() == [(7,)]


def test_start_again_needs_a_shut_down_cluster() -> None:
    with PostgresServer() as server, pytest.raises(RuntimeError, match="needs a cluster"):
        server.start_again()
    with pytest.raises(RuntimeError, match="not running"):
        server.shut_down()
