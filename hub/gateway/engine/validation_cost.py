"""What one call's argument check may cost: linear in the arguments, whatever the schema.

Found by sending it (stop 43): jsonschema's work is not bounded by the size of the arguments.

- ``uniqueItems`` compares items pairwise (``jsonschema._utils.uniq``) when they cannot be
  sorted, which is any array of objects, or of a number and a string together: 4,000 such items
  took 14 s of the event loop on this machine, and the 2 MiB a request may carry holds about
  300,000. :func:`unique_items` replaces the keyword with one pass that keys each item by its
  JSON Schema identity (``true`` is not ``1``, ``1`` is ``1.0``, an object's keys are unordered).
- ``oneOf`` validates every branch, and ``unevaluatedProperties`` validates ``anyOf`` and
  ``oneOf`` branches again to learn what they evaluated. A recursive schema built of either
  (what pydantic writes for a recursive model with a union in it) does twice the work at each
  level of the arguments: nesting 16 levels deep took 3 s, and every level more doubles it.
  :func:`counted` wraps every keyword of a dialect, so each evaluation of a keyword draws on the
  call's :class:`Budget`; the budget is :data:`BASE_STEPS` plus :data:`STEPS_PER_VALUE` for each
  JSON value in the arguments, so a large call with an ordinary schema passes and an exponential
  one stops within about a tenth of a second, failed closed as ``invalid_arguments``.

The library offers no bound of its own, so the bound is written here, around its keywords.

Linear is still long for a large call: a 2.3 MB array of integers took 4.2 s to check on this
machine (stop 44), the event loop every tenant's requests share stalled for all of it. Arguments
of more than :data:`OFF_LOOP_VALUES` JSON values are checked on the process's one checking
thread instead (:func:`check_off_loop`): the loop goes on serving while it runs, and one
thread, not a pool, because the GIL lets no two checks run at once anyway, and each more would
take the loop's share of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, TypeVar

from jsonschema.exceptions import ValidationError

__all__ = [
    "BASE_STEPS",
    "OFF_LOOP_VALUES",
    "STEPS_PER_VALUE",
    "Budget",
    "TooCostly",
    "check_off_loop",
    "counted",
    "more_values_than",
    "spending",
    "unique_items",
]

#: Keyword evaluations any call may use, whatever the size of its arguments.
BASE_STEPS = 20_000
#: And for each JSON value in the arguments (an object, an array, a string, a number …).
#: Measured (stop 43): an array of integers evaluates 1.0 keyword a value, a recursive tree of
#: named nodes 2.3, an array of a ``oneOf`` of four object shapes 8.2.
STEPS_PER_VALUE = 32
#: Arguments with more JSON values than this are checked off the event loop. Measured (stop
#: 44): a check costs 5 to 15 µs a value, so the loop is held for at most a few tens of ms.
OFF_LOOP_VALUES = 2_000

Keyword = Callable[[Any, Any, Any, Any], Any]
_T = TypeVar("_T")


class TooCostly(Exception):
    """The arguments would cost more keyword evaluations than the call's budget."""


def _count_values(value: Any, stop_after: int | None = None) -> int:
    """The JSON values in ``value``, counting no further than past ``stop_after``."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if stop_after is not None and count > stop_after:
            break
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def more_values_than(value: Any, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` JSON values (it visits at most one more)."""
    return _count_values(value, limit) > limit


_CHECKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hub-arguments")


async def check_off_loop(check: Callable[[Any], _T], arguments: Any) -> _T:
    """``check(arguments)`` on the checking thread, awaited; the thread runs one at a time."""
    return await asyncio.get_running_loop().run_in_executor(_CHECKER, check, arguments)


class Budget:
    """The keyword evaluations left to one call's check. It starts at :data:`BASE_STEPS`; the
    arguments are counted only if that runs out, so a small call never walks them twice."""

    __slots__ = ("arguments", "counted", "left")

    def __init__(self, arguments: Any) -> None:
        self.arguments = arguments
        self.left = BASE_STEPS
        self.counted = False

    def overdrawn(self) -> None:
        """Add the arguments' share once, then :class:`TooCostly` if still below zero."""
        if not self.counted:
            self.counted = True
            self.left += STEPS_PER_VALUE * _count_values(self.arguments)
            if self.left >= 0:
                return
        raise TooCostly


_CURRENT: ContextVar[Budget | None] = ContextVar("hub_validation_budget", default=None)


class spending:  # lower case: used as a ``with`` statement, like ``contextlib``'s helpers
    """Within the block, keyword evaluations draw on a budget for ``arguments``."""

    __slots__ = ("_arguments", "_token")

    def __init__(self, arguments: Any) -> None:
        self._arguments = arguments

    def __enter__(self) -> Budget:
        budget = Budget(self._arguments)
        self._token = _CURRENT.set(budget)
        return budget

    def __exit__(self, *_exc: object) -> None:
        _CURRENT.reset(self._token)


def counted(keyword: Keyword) -> Keyword:
    """``keyword``, drawing one step from the current budget each time it is evaluated (no
    budget outside :class:`spending`: checking a schema against its meta-schema is not one)."""

    def evaluate(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = _CURRENT.get()
        if budget is not None:
            budget.left -= 1
            if budget.left < 0:
                budget.overdrawn()
        return keyword(validator, value, instance, schema)

    return evaluate


_NULL, _BOOLEAN, _NUMBER, _STRING, _ARRAY, _OBJECT, _OTHER = range(7)


def _identity(value: Any) -> Any:
    """A hashable key equal for two JSON values exactly when JSON Schema calls them equal."""
    if value is None:
        return (_NULL,)
    if isinstance(value, bool):
        return (_BOOLEAN, value)
    if isinstance(value, int | float):
        return (_NUMBER, value)
    if isinstance(value, str):
        return (_STRING, value)
    if isinstance(value, list):
        return (_ARRAY, tuple(map(_identity, value)))
    if isinstance(value, dict):
        return (_OBJECT, frozenset((k, _identity(v)) for k, v in value.items()))
    return (_OTHER, id(value))  # nothing a JSON parser makes: equal only to itself


def unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``uniqueItems`` in one pass over the items (jsonschema's may compare every pair)."""
    if unique is not True or not validator.is_type(instance, "array"):
        return
    seen: dict[Any, int] = {}
    for index, item in enumerate(instance):
        first = seen.setdefault(_identity(item), index)
        if first != index:
            yield ValidationError(f"has non-unique elements (item {index} repeats item {first})")
            return
