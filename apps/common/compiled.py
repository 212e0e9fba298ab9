"""A query that Django compiles to SQL once per database connection, then runs again for other
values of one integer parameter (a primary or foreign key).

Every run's setup reads the run with what it needs beside it (seven tables through
``select_related``) and the conversation's history. Django builds and compiles a QuerySet's SQL
at every evaluation, and for these two that was most of their CPU: issue 20's run worker spent
4.2 ms of CPU per run in the setup's thread hop, 3 ms of it in the setup query (0.8 ms of
compiling when idle, of a run's 20 ms fixed cost), the history 1.5 ms.

:class:`CompiledQuery` builds the QuerySet once with a sentinel for the parameter, compiles it
once per connection (Django's connections are per thread: each thread compiles a copy of the
query and keeps it, dropped with the thread) and later calls run the same SQL with the
sentinel's place in the parameters replaced, returning the rows (a list, read at once). The
rows still go through Django's own iterables (model instances with their ``select_related``
objects and annotations, ``values()`` dicts or ``values_list`` tuples, each column's
converters applied): only the compiler's ``as_sql`` is skipped, through Django's idiom for a
query of another class (``Query.chain(klass)``, as ``update()`` makes an ``UpdateQuery``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import QuerySet
from django.db.models.sql.compiler import SQLCompiler
from django.db.models.sql.query import Query

__all__ = ["CompiledQuery"]

SENTINEL = -7_340_031_993_117
"""What the QuerySet is built with in place of the parameter: an integer no key holds, found
again among the compiled parameters by its value."""


class _Replayed(Query):
    """A query whose compiler is the one given: it compiled the same query before, and its
    ``as_sql`` answers with that SQL (see :class:`_Compiled`)."""

    replay: SQLCompiler

    def get_compiler(self, using: str | None = None, connection: Any = None,
                     elide_empty: bool = True) -> SQLCompiler:
        return self.replay


class _Compiled:
    """One connection's compilation of the QuerySet: its SQL, its parameters and where the
    sentinel sits among them, and the compiler (it holds what the iterables read beside the
    SQL: the selected columns, the related objects' places, the annotations')."""

    def __init__(self, queryset: QuerySet[Any], connection: Any) -> None:
        self.queryset = queryset
        # a copy: compiling adds the select_related joins to the query it compiles, and the
        # template is every thread's (two threads compiling it at once saved broken SQL)
        self.compiler = queryset.query.clone().get_compiler(connection=connection)
        self.sql, params = self.compiler.as_sql()
        self.params = list(params)
        places = [i for i, value in enumerate(self.params) if value == SENTINEL]
        if len(places) != 1:
            raise ValueError(f"the sentinel is {len(places)} of the query's parameters, not "
                             "one: build the query with it exactly once")
        self.place = places[0]
        self.current = self.params  # what the next evaluation's as_sql answers with
        self.compiler.as_sql = lambda *args, **kwargs: (self.sql, self.current)  # type: ignore[method-assign]
        self.replayed = queryset.query.chain(_Replayed)
        self.replayed.replay = self.compiler

    def evaluated_for(self, value: int) -> list[Any]:
        """The QuerySet's rows for ``value``, from the compiled SQL."""
        self.current = self.params.copy()
        self.current[self.place] = value
        queryset = self.queryset._chain()
        # not the ``query`` setter: it makes a values_list() QuerySet yield dicts
        queryset._query = self.replayed
        # evaluated here: the compiler is the thread's next call's too, and a QuerySet handed
        # out would drop whatever were chained onto it (a filter, a slice, count())
        return list(queryset)


class CompiledQuery:
    """``build(key)`` -> a QuerySet (of model instances, ``values()`` dicts or ``values_list``
    tuples), compiled once per database connection; ``compiled(key)`` is the list of its rows
    for ``key`` (an int), read without compiling it again. Raises ValueError at a thread's
    first call if the built QuerySet does not hold ``key`` exactly once among its SQL's
    parameters."""

    def __init__(self, build: Callable[[int], QuerySet[Any]]) -> None:
        self._build = build
        self._template: QuerySet[Any] | None = None  # built at the first call, never evaluated
        self._thread = threading.local()  # .compiled: this thread's _Compiled

    def __call__(self, key: int) -> list[Any]:
        if self._template is None:
            self._template = self._build(SENTINEL)
        connection = connections[self._template.db]  # the calling thread's
        compiled: _Compiled | None = getattr(self._thread, "compiled", None)
        if compiled is None or compiled.compiler.connection is not connection:
            compiled = self._thread.compiled = _Compiled(self._template, connection)
        return compiled.evaluated_for(key)
