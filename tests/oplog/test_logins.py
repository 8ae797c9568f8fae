"""The admin's login through its real view (CSRF enforced): throttled per account and per caller,
locked out for a cool-off read from a clock the test moves, the right password refused during a
lock-out, and the caller kept only as its key for the day.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.auth.models import User
from django.test import Client

from tmsite.callers import buckets, caller
from tmsite.callers.clock import FakeClock
from tmsite.oplog import logins
from tmsite.oplog.models import LoginEvent

pytestmark = [pytest.mark.spec("OP4"), pytest.mark.django_db]

LOGIN = "/admin/login/"
PASSWORD = "correct horse battery staple 42"
#: Callers as nginx forwards them (documentation ranges, RFC 5737).
ALICE = "203.0.113.7"
MALLORY = "198.51.100.9"

INVALID = (
    "Please enter the correct username and password for a staff account. Note that both "
    "fields may be case-sensitive."
)


def locked(what: str, minutes: int) -> str:
    when = "1 minute" if minutes == 1 else f"{minutes} minutes"
    return (
        f"Too many failed logins {what}: logins are refused for now, even with the right "
        f"password. Try again in {when}."
    )


ACCOUNT_LOCKED = locked("for this account", 15)
CALLER_LOCKED = locked("from your address", 15)

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ERRORNOTE = re.compile(r'<p class="errornote">\s*(.*?)\s*</p>', re.S)


@pytest.fixture
def clock(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    """The throttle's clock, five failures an account, twenty a caller, 15 minutes' cool-off."""
    fake = FakeClock(1_800_000_000.0)
    monkeypatch.setattr(logins, "clock", fake)
    settings.TM_LOGIN_FAILURES = 5
    settings.TM_LOGIN_CALLER_FAILURES = 20
    settings.TM_LOGIN_COOLOFF = 900
    settings.TM_RATE_STORE = "memory"
    # a password check is the slow part of a failed login; the throttle does not depend on it
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    buckets._stores.clear()
    logins._known.clear()
    yield fake
    buckets._stores.clear()
    logins._known.clear()


@pytest.fixture
def maintainer(clock: FakeClock) -> User:
    return User.objects.create_user("maintainer", password=PASSWORD, is_staff=True)


class Door:
    """One caller at the admin's login page, as a browser is: GET the form, POST it back."""

    def __init__(self, forwarded: str | None = None, admin: str = "/admin/", **extra: str) -> None:
        if forwarded:
            extra["HTTP_X_FORWARDED_FOR"] = forwarded
        self.client = Client(enforce_csrf_checks=True, **extra)
        self.admin = admin
        self.token = ""
        self.page = self.open(admin + "login/")

    def open(self, path: str) -> str:
        """GET a page with a form; its CSRF token is the one the next POST sends."""
        page = self.client.get(path)
        assert page.status_code == 200
        text = page.content.decode()
        found = TOKEN.search(text)
        assert found
        self.token = found.group(1)
        return text

    def submit(self, path: str, form: dict[str, Any]) -> Any:
        """POST a form to ``path`` with the token, urlencoded."""
        body = urlencode({"csrfmiddlewaretoken": self.token, **form})
        return self.client.post(path, body, content_type="application/x-www-form-urlencoded")

    def post(self, username: str, password: str, **fields: str) -> Any:
        """The login form posted as a browser posts it."""
        form = {"username": username, "password": password, "next": self.admin, **fields}
        return self.submit(self.admin + "login/", form)

    def logged_in(self) -> bool:
        return "_auth_user_id" in self.client.session


def answer(response: Any) -> tuple[int, list[str]]:
    """The status and the error notes: the login page's (200), or the lock-out's page (429)."""
    return response.status_code, ERRORNOTE.findall(response.content.decode())


def refused(message: str) -> tuple[int, list[str]]:
    """An attempt during a lock-out: 429 and the one sentence, the password never looked at."""
    return 429, [message]


def wrong(*extra: str) -> tuple[int, list[str]]:
    """A failed login: the login page again, with the sentence of the failure (and more)."""
    return 200, [INVALID, *extra]


def account_lock(account: str) -> LoginEvent:
    return LoginEvent.objects.get(outcome=LoginEvent.LOCKED, account=account)


def test_a_thousand_wrong_passwords_lock_the_account_until_the_cool_off_ends(
    clock: FakeClock, maintainer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    real_verify = MD5PasswordHasher.verify

    def verify(hasher: MD5PasswordHasher, password: str, encoded: str) -> bool:
        checked.append(password)  # the real check still runs: this only counts them
        return real_verify(hasher, password, encoded)

    monkeypatch.setattr(MD5PasswordHasher, "verify", verify)
    door = Door(ALICE)
    cpu = time.process_time()
    for _ in range(100):
        door.open(LOGIN)
    page_cpu = (time.process_time() - cpu) / 100
    cpu = time.process_time()
    responses = [door.post("maintainer", f"guess-{n}") for n in range(1, 1001)]
    refusal_cpu = (time.process_time() - cpu) / 1000
    answers = [answer(response) for response in responses]
    assert answers[:4] == [wrong()] * 4
    assert answers[4] == wrong(ACCOUNT_LOCKED)  # the fifth failure brings the lock-out
    assert answers[5:] == [refused(ACCOUNT_LOCKED)] * 995  # the password is not looked at
    assert checked == [f"guess-{n}" for n in range(1, 6)]
    assert {response["Retry-After"] for response in responses[5:]} == {"900"}
    # CPU against this door's own page views in the same run (a shared machine slows both):
    # a refused attempt costs about what showing the login page does, the password unhashed
    assert refusal_cpu < 2 * page_cpu, (
        f"an attempt took {refusal_cpu * 1e3:.2f} ms of CPU, the page {page_cpu * 1e3:.2f} ms"
    )

    # the state: five failures, one lock-out for 15 minutes that refused the other 995
    lock = account_lock("maintainer")
    began = datetime.fromtimestamp(clock(), UTC)
    assert (lock.scope, lock.at, lock.until) == ("account", began, began + timedelta(minutes=15))
    assert lock.refused == 995
    assert LoginEvent.objects.filter(outcome=LoginEvent.FAILED).count() == 5
    assert lock.caller == LoginEvent.objects.filter(outcome="failed").first().caller  # type: ignore[union-attr]

    # the right password is refused while it lasts, from this caller and from any other
    assert answer(door.post("maintainer", PASSWORD)) == refused(ACCOUNT_LOCKED)
    other = Door(MALLORY)
    assert answer(other.post("maintainer", PASSWORD)) == refused(ACCOUNT_LOCKED)
    clock.advance(899)
    last = door.post("maintainer", PASSWORD)
    assert answer(last) == refused(locked("for this account", 1))
    assert last["Retry-After"] == "1"
    assert not door.logged_in() and not other.logged_in()
    assert account_lock("maintainer").refused == 998
    assert not LoginEvent.objects.filter(outcome=LoginEvent.OK).exists()

    # the cool-off over, the right password logs in
    clock.advance(1)
    logged = door.post("maintainer", PASSWORD)
    assert logged.status_code == 302 and logged["Location"] == "/admin/"
    assert door.logged_in()
    assert LoginEvent.objects.filter(outcome=LoginEvent.OK, account="maintainer").count() == 1


def test_after_a_lock_out_the_count_starts_again(clock: FakeClock, maintainer: User) -> None:
    door = Door(ALICE)
    for n in range(5):
        door.post("Maintainer ", f"guess-{n}")  # the name as typed, trimmed and case folded
    clock.advance(900)
    assert [answer(door.post("maintainer", "wrong")) for _ in range(4)] == [wrong()] * 4
    assert answer(door.post("MAINTAINER", "wrong")) == wrong(ACCOUNT_LOCKED)
    assert LoginEvent.objects.filter(outcome=LoginEvent.LOCKED).count() == 2


def test_a_login_starts_the_account_count_again(clock: FakeClock, maintainer: User) -> None:
    door = Door(ALICE)
    for n in range(4):
        assert answer(door.post("maintainer", f"guess-{n}")) == wrong()
    assert door.post("maintainer", PASSWORD).status_code == 302
    door = Door(ALICE)
    for n in range(4):
        assert answer(door.post("maintainer", f"guess-{n}")) == wrong()
    assert not LoginEvent.objects.filter(outcome=LoginEvent.LOCKED).exists()


def test_one_caller_trying_many_accounts_is_locked_out_and_no_one_else(
    clock: FakeClock, maintainer: User
) -> None:
    mallory = Door(MALLORY)
    answers = [answer(mallory.post(f"user{n}", "password")) for n in range(20)]
    assert answers[:19] == [wrong()] * 19
    assert answers[19] == wrong(CALLER_LOCKED)
    # an account it never tried, with the right password: refused, because of who asks
    assert answer(mallory.post("maintainer", PASSWORD)) == refused(CALLER_LOCKED)
    assert not mallory.logged_in()
    lock = LoginEvent.objects.get(outcome=LoginEvent.LOCKED)
    assert (lock.scope, lock.refused) == ("caller", 1)
    assert not LoginEvent.objects.filter(outcome=LoginEvent.LOCKED, scope="account").exists()
    # another caller is not locked out, and its key is not the locked one
    alice = Door(ALICE)
    assert alice.post("maintainer", PASSWORD).status_code == 302
    assert LoginEvent.objects.get(outcome=LoginEvent.OK).caller != lock.caller
    # the same caller behind another proxy hop is the same caller
    again = Door(f"{MALLORY}, 127.0.0.1")
    assert answer(again.post("maintainer", PASSWORD)) == refused(CALLER_LOCKED)
    clock.advance(900)
    assert Door(MALLORY).post("maintainer", PASSWORD).status_code == 302


def test_the_caller_key_is_the_rate_limits_digest_of_the_day(
    clock: FakeClock, maintainer: User, rf: Any
) -> None:
    Door(ALICE).post("maintainer", "wrong")
    row = LoginEvent.objects.get()
    secret = buckets.store().day_secret(clock())
    assert row.caller == buckets.digest(secret, ALICE).hex()
    request = rf.get("/", HTTP_X_FORWARDED_FOR=ALICE)
    assert caller.keyed(caller.address_in(request.META), clock()) == row.caller
    assert (
        caller.keyed(caller.address_in(request.META), clock() + 86_400) != row.caller
    )  # a new day, a new key


def test_the_unlock_command_ends_a_lock_out_now(clock: FakeClock, maintainer: User) -> None:
    from io import StringIO

    from django.core.management import call_command

    door = Door(ALICE)
    for n in range(5):
        door.post("maintainer", f"guess-{n}")
    out = StringIO()
    call_command("tm_logins", "unlock", "Maintainer", stdout=out)
    assert out.getvalue() == "ended 1 lock-outs\n"
    assert account_lock("maintainer").until == datetime.fromtimestamp(clock(), UTC)
    assert door.post("maintainer", PASSWORD).status_code == 302


def test_login_events_past_their_retention_are_purged(
    clock: FakeClock, maintainer: User, settings: Any
) -> None:
    from io import StringIO

    from django.core.management import call_command

    now = datetime.fromtimestamp(clock(), UTC)
    for days in (40, 31, 29, 1):
        LoginEvent.objects.create(
            at=now - timedelta(days=days), account="x", caller="c", outcome="ok"
        )
    out = StringIO()
    call_command("tm_logins", "purge", stdout=out)
    assert out.getvalue() == "deleted 2 login events older than 30 days\n"
    assert LoginEvent.objects.count() == 2


# --- no address anywhere ----------------------------------------------------------------------

DIRECT = "192.0.2.44"


@pytest.mark.spec("OP2", "OP4")
def test_no_table_log_line_or_cache_key_holds_the_caller(
    clock: FakeClock, maintainer: User, settings: Any, tmp_path: Any, caplog: Any
) -> None:
    """Logins, failures, lock-outs and refusals from a direct caller and a proxied one; then
    every row of every table, every log record, the cache, the rate limit's file and the
    throttle's memory are searched for either address (and the proxy's)."""
    from django.apps import apps
    from django.core.cache import caches

    User.objects.filter(pk=maintainer.pk).update(is_superuser=True)  # to see the events
    caplog.set_level(logging.DEBUG)
    settings.TM_RATE_STORE = "file"
    settings.TM_RATE_FILE = tmp_path / "ratelimit.buckets"
    buckets._stores.clear()
    direct, proxied = Door(REMOTE_ADDR=DIRECT), Door(ALICE)
    for door in (direct, proxied):
        for n in range(7):
            door.post("maintainer", f"guess-{n}")
        door.post("nobody", "guess")
    clock.advance(900)
    assert proxied.post("maintainer", PASSWORD).status_code == 302
    events = proxied.client.get("/admin/tm_oplog/loginevent/")
    assert events.status_code == 200
    page = events.content.decode()
    for row in LoginEvent.objects.all():
        assert row.caller[:8] in page  # the key's first digits, all the page has of a caller
    assert LoginEvent.objects.filter(outcome="locked").count() == 1
    assert len(set(LoginEvent.objects.values_list("caller", flat=True))) == 2

    secrets = [DIRECT, ALICE, "127.0.0.1"]
    found = []
    for model in apps.get_models():
        for row in model._default_manager.values():
            found += [
                f"{model.__name__}.{k}" for k, v in row.items() for x in secrets if x in str(v)
            ]
    assert not found, found
    assert not any(x in page for x in secrets)
    lines = [r.getMessage() + repr(r.args) + repr(r.__dict__) for r in caplog.records]
    assert [r.getMessage() for r in caplog.records if r.name == "tmsite.oplog.logins"] == [
        "admin login: account 'maintainer' locked out until 2027-01-15 08:15:00 UTC "
        f"(caller key {LoginEvent.objects.get(outcome='locked').caller[:8]}…)"
    ]
    assert not [line for line in lines for x in secrets if x in line]
    cache = caches["default"]
    stored = repr(getattr(cache, "_cache", {})) + repr(getattr(cache, "_expire_info", {}))
    assert not any(x in stored for x in secrets)
    raw = settings.TM_RATE_FILE.read_bytes()
    assert not any(x.encode() in raw for x in secrets)
    assert not any(x in repr(logins._known) for x in secrets)


# --- passwords, sessions, the second factor, the admin's path --------------------------------


def test_the_admins_password_change_refuses_weak_passwords(
    clock: FakeClock, maintainer: User
) -> None:
    door = Door(ALICE)
    assert door.post("maintainer", PASSWORD).status_code == 302
    change = "/admin/password_change/"
    refusals = {
        "maintainer1": [
            "The password is too similar to the username.",
            "This password is too short. It must contain at least 12 characters.",
        ],
        "password1234": ["This password is too common."],
        "739204718263": ["This password is entirely numeric."],
    }
    for weak, messages in refusals.items():
        door.open(change)
        form = {"old_password": PASSWORD, "new_password1": weak, "new_password2": weak}
        answer = door.submit(change, form)
        assert answer.status_code == 200
        assert field_errors(answer.content.decode()) == messages, weak
    maintainer.refresh_from_db()
    assert maintainer.check_password(PASSWORD)
    door.open(change)
    strong = "a long pass phrase nobody guesses"
    form = {"old_password": PASSWORD, "new_password1": strong, "new_password2": strong}
    done = door.submit(change, form)
    assert (done.status_code, done["Location"]) == (302, "/admin/password_change/done/")
    maintainer.refresh_from_db()
    assert maintainer.check_password(strong)


ERRORS = re.compile(r'<ul class="errorlist"[^>]*>(.*?)</ul>', re.S)
ERRORS_ITEM = re.compile(r"<li>(.*?)</li>")


def field_errors(page: str) -> list[str]:
    """The messages under a form's fields."""
    return [item for errors in ERRORS.findall(page) for item in ERRORS_ITEM.findall(errors)]


def test_a_staff_session_ends_with_the_browser_or_after_its_age(
    clock: FakeClock, maintainer: User, settings: Any
) -> None:
    from django.contrib.sessions.models import Session
    from django.utils import timezone

    door = Door(ALICE)
    cookie = door.post("maintainer", PASSWORD).cookies["sessionid"]
    assert (cookie["max-age"], cookie["expires"]) == ("", "")  # gone when the browser closes
    assert door.client.session.get_expire_at_browser_close()

    settings.SESSION_EXPIRE_AT_BROWSER_CLOSE = False
    settings.SESSION_COOKIE_AGE = 600
    door = Door(MALLORY)
    cookie = door.post("maintainer", PASSWORD).cookies["sessionid"]
    assert cookie["max-age"] == 600
    session = Session.objects.get(session_key=cookie.value)
    left = (session.expire_date - timezone.now()).total_seconds()
    assert 590 < left <= 600
    assert door.client.get("/admin/").status_code == 200
    Session.objects.filter(pk=session.pk).update(expire_date=timezone.now())
    again = door.client.get("/admin/")
    assert (again.status_code, again["Location"]) == (302, "/admin/login/?next=/admin/")


ROOT_PASSWORD = "another long pass phrase 77"
KEY_FIELD = re.compile(r'name="key"[^>]*value="([0-9a-f]+)"|value="([0-9a-f]+)"[^>]*name="key"')


def _enrol(door: Door, user: User) -> Any:
    """A TOTP device for ``user``, added through the admin's own form as a maintainer does."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    add = "/admin/otp_totp/totpdevice/add/"
    found = KEY_FIELD.search(door.open(add))
    assert found
    form = {
        "user": str(user.pk),
        "name": "phone",
        "confirmed": "on",
        "key": found.group(1) or found.group(2),
        "step": "30",
        "t0": "0",
        "digits": "6",
        "tolerance": "1",
        "drift": "0",
        "throttling_failure_timestamp": "",
        "throttling_failure_count": "0",
        "_save": "Save",
    }
    saved = door.submit(add, form)
    assert saved.status_code == 302, field_errors(saved.content.decode())
    return TOTPDevice.objects.get(user=user)


def _token(device: Any, offset: int = 0) -> str:
    from django_otp.oath import TOTP

    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time() + offset
    return f"{totp.token():0{device.digits}d}"


def test_with_the_second_factor_on_the_login_asks_for_a_valid_totp(
    clock: FakeClock, maintainer: User, settings: Any
) -> None:
    from django.contrib.admin.models import ADDITION, LogEntry

    # enrolled in the admin while the setting is off, by a superuser: kept with who and when
    User.objects.create_superuser("root", password=ROOT_PASSWORD)
    root = Door(ALICE)
    assert root.post("root", ROOT_PASSWORD).status_code == 302
    device = _enrol(root, maintainer)
    entry = LogEntry.objects.get(object_id=str(device.pk))
    made = (entry.user.username, entry.action_flag, entry.object_repr)
    assert made == ("root", ADDITION, "phone (maintainer)")
    config = root.client.get(f"/admin/otp_totp/totpdevice/{device.pk}/config/")
    assert device.config_url.replace("&", "&amp;") in config.content.decode()

    settings.TM_ADMIN_OTP = True
    # a session the password alone made has no admin any more
    assert root.client.get("/admin/").status_code == 302
    door = Door(MALLORY)
    assert 'name="otp_token"' in door.page
    assert answer(door.post("maintainer", PASSWORD)) == (200, ["Please enter your OTP token."])
    assert not door.logged_in()
    assert not LoginEvent.objects.filter(account="maintainer").exists()  # not a guess

    # a wrong token is a failed login (it counts towards the lock-out); the right one logs in
    wrong_token = f"{(int(_token(device)) + 1) % 1_000_000:06d}"
    wrong_tokens = {wrong_token} - {_token(device, o) for o in (-30, 0, 30)}
    assert answer(door.post("maintainer", PASSWORD, otp_token=wrong_tokens.pop())) == (
        200,
        ["Invalid token. Please make sure you have entered it correctly."],
    )
    assert not door.logged_in()
    assert LoginEvent.objects.get(account="maintainer").outcome == LoginEvent.TOKEN_FAILED
    device.refresh_from_db()
    device.throttle_reset()  # django-otp's own throttle: a second verification waits a second
    door = Door(MALLORY)
    logged = door.post("maintainer", PASSWORD, otp_token=_token(device))
    assert (logged.status_code, logged["Location"]) == (302, "/admin/")
    assert door.client.get("/admin/").status_code == 200
    assert LoginEvent.objects.filter(account="maintainer", outcome="ok").count() == 1


def test_the_admin_is_where_the_setting_puts_it(
    clock: FakeClock, maintainer: User, settings: Any
) -> None:
    import types

    from tmsite import urls
    from tmsite.entities.loaders import fill, parse_records
    from tmsite.site.admin_links import admin_row

    settings.TM_ADMIN_PATH = "back-office/"
    moved = types.ModuleType("moved_admin_urls")
    moved.urlpatterns = urls.patterns()  # type: ignore[attr-defined]
    moved.handler400 = urls.handler400  # type: ignore[attr-defined]
    settings.ROOT_URLCONF = moved
    assert Client().get("/admin/login/").status_code == 404
    door = Door(ALICE, admin="/back-office/")
    logged = door.post("maintainer", PASSWORD)
    assert (logged.status_code, logged["Location"]) == (302, "/back-office/")
    # the links to rows follow it: the explorer's, and the lock-out page's back to the login
    root = Path(__file__).resolve().parents[2]
    records = [(root / "data" / name).read_bytes() for name in ("autopsy.json", "lessons.json")]
    fill(parse_records(*records))
    lesson = admin_row("tm://tinymachines/entity/lesson/jump")
    assert lesson is not None
    assert lesson.href.startswith("/back-office/tm_entities/lesson/")
    other = Door(MALLORY, admin="/back-office/")
    for n in range(6):
        last = other.post("nobody", f"guess-{n}")
    assert last.status_code == 429
    assert 'href="/back-office/login/"' in last.content.decode()


def test_the_logins_in_the_admin_are_read_only(clock: FakeClock, maintainer: User) -> None:
    User.objects.create_superuser("root", password=ROOT_PASSWORD)
    Door(ALICE).post("maintainer", "wrong")
    door = Door(ALICE)
    assert door.post("root", ROOT_PASSWORD).status_code == 302
    row = LoginEvent.objects.get(outcome=LoginEvent.FAILED)
    listing = door.client.get("/admin/tm_oplog/loginevent/").content.decode()
    assert "maintainer" in listing and row.caller[:8] in listing and row.caller not in listing
    base = "/admin/tm_oplog/loginevent/"
    assert door.client.get(f"{base}add/").status_code == 403
    assert door.client.get(f"{base}{row.pk}/delete/").status_code == 403
    view = door.client.get(f"{base}{row.pk}/change/")
    assert view.status_code == 200 and 'name="_save"' not in view.content.decode()
    door.open(f"{base}{row.pk}/change/")
    assert door.submit(f"{base}{row.pk}/change/", {"account": "someone"}).status_code == 403
    row.refresh_from_db()
    assert row.account == "maintainer"


def test_with_the_rate_limits_redis_down_the_throttle_keys_callers_by_the_machines_secret(
    clock: FakeClock, maintainer: User, settings: Any, caplog: Any
) -> None:
    """A Redis nothing listens on (a loopback port held refusing): the login still counts
    failures, and the caller's key is the machine's own for the day (its bucket file's, which
    every worker of the machine shares), the same for each of its attempts."""
    from tests.oplog.servers import refusing_port

    with refusing_port() as port:
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": f"redis://127.0.0.1:{port}/0",
            }
        }
        settings.TM_RATE_STORE = "redis"
        buckets._stores.clear()
        door = Door(ALICE)
        answers = [answer(door.post("maintainer", f"guess-{n}")) for n in range(6)]
    assert answers == [wrong()] * 4 + [wrong(ACCOUNT_LOCKED), refused(ACCOUNT_LOCKED)]
    keys = set(LoginEvent.objects.values_list("caller", flat=True))
    machine = buckets.FileStore(Path(settings.TM_RATE_FILE)).day_secret(clock())
    assert keys == {buckets.digest(machine, ALICE).hex()}
    assert "the shared cache does not answer (ConnectionError" in caplog.text
