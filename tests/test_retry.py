"""RetryPolicy: the delays, the attempt count, jitter bounds, and the tenacity objects it makes."""

from __future__ import annotations

import math
import random

import pytest
import tenacity

from config.schema import MqttSettings
from robot.core.retry import RetryPolicy, describe_exception
from robot.llm.client import llm_retry_policy
from robot.mqtt.connection import reconnect_policy


def test_first_delay_then_doubling_then_the_cap() -> None:
    policy = RetryPolicy(attempts=None, first_delay_s=0.5, max_delay_s=30.0)
    assert [policy.delay_s(n) for n in range(1, 9)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert policy.delay_s(10_000) == 30.0  # no overflow however long the broker stays away


def test_multiplier_and_fixed_delay() -> None:
    assert [RetryPolicy(5, 0.1, 10.0, multiplier=3.0).delay_s(n) for n in (1, 2, 3)] == pytest.approx([0.1, 0.3, 0.9])
    assert [RetryPolicy(None, 2.0, 2.0, multiplier=1.0).delay_s(n) for n in (1, 2, 50)] == [2.0, 2.0, 2.0]


def test_uncapped_policy_keeps_growing() -> None:
    policy = RetryPolicy(attempts=11, first_delay_s=0.5)
    assert policy.max_delay_s == math.inf
    assert policy.delay_s(10) == 0.5 * 2**9 == 256.0


def test_jitter_stays_between_the_delay_and_the_cap() -> None:
    policy = RetryPolicy(attempts=None, first_delay_s=1.0, max_delay_s=5.0, jitter=0.2)
    random.seed(3)
    firsts = [policy.jittered_delay_s(1) for _ in range(500)]
    assert all(1.0 <= d <= 1.2 for d in firsts)
    assert max(firsts) - min(firsts) > 0.15  # really spread, not one value
    assert all(4.0 <= policy.jittered_delay_s(3) <= 4.8 for _ in range(200))
    assert all(policy.jittered_delay_s(4) == 5.0 for _ in range(200))  # 8 s capped; jitter never passes the cap
    # the extremes of the random draw give exactly the bounds
    assert policy.jittered_delay_s(2, rng=lambda lo, hi: lo) == 2.0
    assert policy.jittered_delay_s(2, rng=lambda lo, hi: hi) == pytest.approx(2.4)


async def test_retrying_stops_after_the_attempts_and_waits_the_delays() -> None:
    policy = RetryPolicy(attempts=4, first_delay_s=0.25, max_delay_s=0.75)
    slept: list[float] = []
    tries = 0

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    with pytest.raises(tenacity.RetryError) as failed:
        async for attempt in policy.retrying(retry_on=(ConnectionError,), sleep=sleep):
            with attempt:
                tries += 1
                raise ConnectionError(f"refused #{tries}")
    assert tries == 4
    assert slept == [0.25, 0.5, 0.75]  # one wait between each two tries, capped
    last = failed.value.last_attempt
    assert last.attempt_number == 4 and str(last.exception()) == "refused #4"


async def test_retrying_ends_on_success_and_raises_other_errors_at_once() -> None:
    policy = RetryPolicy(attempts=3, first_delay_s=0.0)
    tries = 0
    async for attempt in policy.retrying(retry_on=(ConnectionError,)):
        with attempt:
            tries += 1
            if tries == 1:
                raise ConnectionError("first one fails")
    assert tries == 2

    tries = 0
    with pytest.raises(ValueError, match="not retryable"):
        async for attempt in policy.retrying(retry_on=(ConnectionError,)):
            with attempt:
                tries += 1
                raise ValueError("not retryable")
    assert tries == 1


async def test_before_sleep_sees_the_error_and_the_delay() -> None:
    seen: list[tuple[int, str, float]] = []

    def before_sleep(state: tenacity.RetryCallState) -> None:
        seen.append((state.attempt_number, describe_exception(state.outcome.exception()), state.next_action.sleep))

    async def sleep(_: float) -> None:
        pass

    with pytest.raises(tenacity.RetryError):
        async for attempt in RetryPolicy(3, 0.5).retrying(retry_on=(TimeoutError,), before_sleep=before_sleep,
                                                          sleep=sleep):
            with attempt:
                raise TimeoutError("no first token within 20s")
    assert seen == [(1, "TimeoutError: no first token within 20s", 0.5),
                    (2, "TimeoutError: no first token within 20s", 1.0)]


def test_one_attempt_means_no_retry() -> None:
    assert RetryPolicy(attempts=1, first_delay_s=0.5).retries == 0
    assert RetryPolicy(attempts=None, first_delay_s=0.5).retries is None
    state = tenacity.RetryCallState(None, None, (), {})  # type: ignore[arg-type]
    assert RetryPolicy(attempts=1, first_delay_s=0.5).stop()(state) is True  # after attempt 1
    assert RetryPolicy(attempts=None, first_delay_s=0.5).stop()(state) is False


def test_backoff_grows_caps_and_starts_over() -> None:
    backoff = RetryPolicy(attempts=None, first_delay_s=0.05, max_delay_s=0.3).backoff()
    assert [backoff.next() for _ in range(5)] == pytest.approx([0.05, 0.1, 0.2, 0.3, 0.3])
    backoff.reset()
    assert backoff.next() == 0.05


def test_the_users_keep_their_behaviour() -> None:
    llm = llm_retry_policy(retries=2, backoff_s=0.5)
    assert (llm.attempts, [llm.delay_s(n) for n in (1, 2)], llm.jitter) == (3, [0.5, 1.0], 0.0)
    mqtt = reconnect_policy(MqttSettings(reconnect_min_s=0.5, reconnect_max_s=30.0))
    assert mqtt.attempts is None
    assert (mqtt.first_delay_s, mqtt.max_delay_s, mqtt.delay_s(1), mqtt.delay_s(20)) == (0.5, 30.0, 0.5, 30.0)
    backoff = mqtt.backoff()
    delays = [backoff.next() for _ in range(12)]
    assert 0.5 <= delays[0] <= 0.6 and all(0.5 <= d <= 30.0 for d in delays) and delays[-1] == 30.0


def test_describe() -> None:
    assert RetryPolicy(3, 0.5).describe() == "3 attempts, waits 0.5s x2"
    assert RetryPolicy(None, 0.5, 30.0, jitter=0.2).describe() == "retry forever, waits 0.5s x2 up to 30s, +20% jitter"
    assert RetryPolicy(None, 2.0, 2.0, multiplier=1.0).describe() == "retry forever, waits 2s"
    assert RetryPolicy(1, 0.5).describe() == "1 attempt"


@pytest.mark.parametrize("kwargs", [dict(attempts=0, first_delay_s=1.0), dict(attempts=2, first_delay_s=-1.0),
                                    dict(attempts=2, first_delay_s=2.0, max_delay_s=1.0),
                                    dict(attempts=2, first_delay_s=1.0, multiplier=0.5),
                                    dict(attempts=2, first_delay_s=1.0, jitter=1.5)])
def test_nonsense_policies_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


def test_describe_exception_names_type_text_and_cause() -> None:
    assert describe_exception(TimeoutError()) == "TimeoutError"
    assert describe_exception(TimeoutError("no first token within 20s")) == "TimeoutError: no first token within 20s"
    try:
        try:
            raise OSError("All connection attempts failed")
        except OSError as inner:
            raise ConnectionError("Connection error.") from inner
    except ConnectionError as outer:
        assert describe_exception(outer) == (
            "ConnectionError: Connection error. (OSError: All connection attempts failed)")
    assert describe_exception(None) == "unknown error"
