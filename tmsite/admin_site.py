"""The box's admin site: Django's, behind a throttled login and, when asked, a second factor.

* The login form counts failed logins per account and per caller and refuses every attempt
  during a lock-out, the right password too (:mod:`tmsite.oplog.logins`), with a sentence
  saying so and for how long. The failure that brings a lock-out shows that sentence on the
  login page under its own; an attempt during the lock-out is answered before any form is
  built or password looked at: **429** with ``Retry-After`` and a small page holding the
  sentence and a link back to the login page, so hammering the door costs the box little.
* ``TM_ADMIN_OTP=1`` asks staff for a TOTP token as well (django-otp): the login page has a
  token field, the form verifies it against the account's device (its only one, or the one
  chosen), and a session that was not verified by a device has no admin at all. Devices are
  enrolled in the admin (Second factor (TOTP) → TOTP devices: add one for the account, then open its
  *qrcode* page for the ``otpauth://`` URL an authenticator app takes) while the setting is
  off, or by a superuser already verified.

The site is ``admin.site`` (``tmsite.apps.TmAdminConfig`` makes it the default), so every
app's ``admin.register`` lands here, and every change through it writes Django's ``LogEntry``.
It is branded with the site's name (``TM_SITE_NAME``) in its header and titles, and its
"View site" link goes to the site's front page.

Spec: OP4.
"""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from typing_extensions import override

from tmsite.oplog import logins
from tmsite.oplog.models import LoginEvent

#: Refusals of a second factor that are not guesses at it: no token typed, no device chosen.
_NOT_A_GUESS = {"token_required", "device_required"}
#: Refusals of the first factor even when a user was found (inactive, not staff).
_FIRST_FACTOR = {"invalid_login", "inactive"}


class ThrottledLoginMixin:
    """A login form whose failures the throttle counts.

    The form's own checks run; a failure is counted, and the one failure too many adds the
    lock-out's sentence to its own. Attempts during a lock-out never reach the form:
    :meth:`TmAdminSite.login` answers them first.
    """

    request: HttpRequest | None
    cleaned_data: dict[str, Any]

    def get_user(self) -> Any:
        """The user the first factor found (``AuthenticationForm.get_user``)."""
        return super().get_user()  # type: ignore[misc]

    def clean(self) -> dict[str, Any]:
        """The form's own checks, inside the throttle."""
        username = str(self.cleaned_data.get("username") or "")
        password = self.cleaned_data.get("password")
        attempt = logins.Attempt.of(self.request, username)
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except forms.ValidationError as error:
            outcome = self._outcome(error)
            began = logins.failed(attempt, outcome) if outcome else None
            if began is None:
                raise
            raise forms.ValidationError(
                [*error.error_list, forms.ValidationError(began.message, code="locked")]
            ) from None
        if username and password and self.get_user() is not None:
            logins.succeeded(attempt)
        return cleaned

    def _outcome(self, error: forms.ValidationError) -> str | None:
        """How a refused attempt is counted: a failure, a token failure, or not at all."""
        codes = {str(item.code) for item in error.error_list if item.code}
        if self.get_user() is None or codes & _FIRST_FACTOR:
            return LoginEvent.FAILED
        if codes and codes <= _NOT_A_GUESS:
            return None
        return LoginEvent.TOKEN_FAILED


class LoginForm(ThrottledLoginMixin, AdminAuthenticationForm):
    """The admin's login form, throttled."""


def otp_login_form() -> type[AuthenticationForm]:
    """The admin's login form with a TOTP token, throttled (django-otp's admin form)."""
    from django_otp import devices_for_user
    from django_otp.admin import OTPAdminAuthenticationForm

    class OtpLoginForm(ThrottledLoginMixin, OTPAdminAuthenticationForm):  # type: ignore[misc]
        """Username, password and token; an account with one device need not choose it."""

        def _chosen_device(self, user: Any) -> Any:
            device = super()._chosen_device(user)
            if device is None and not self.cleaned_data.get("otp_device"):
                devices = list(devices_for_user(user, for_verify=True))
                if len(devices) == 1:
                    return devices[0]
            return device

    return OtpLoginForm


_otp_form: list[type[AuthenticationForm]] = []


def _site_name() -> str:
    from tmsite.site.views import site_name

    return site_name()


def locked_out(request: HttpRequest, found: logins.Lock) -> HttpResponse:
    """The answer to an attempt during a lock-out: 429, ``Retry-After``, the sentence."""
    page = render_to_string(
        "admin/tm_oplog/locked.html",
        {
            "message": found.message,
            "login_url": reverse("admin:login"),
            "static_base": static(""),
        },
    )
    response = HttpResponse(page, status=429)
    seconds = (found.until - found.now).total_seconds()
    response["Retry-After"] = str(max(1, math.ceil(seconds)))
    # The lock-out's row counts these; a log line each would let a guesser fill the log.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


class TmAdminSite(admin.AdminSite):
    """Django's admin site with the throttled login and the optional second factor."""

    site_url = "/"

    @property
    def site_header(self) -> str:  # type: ignore[override]
        """The header of every admin page (and the login box): the site's name."""
        return f"{_site_name()} admin"

    @property
    def site_title(self) -> str:  # type: ignore[override]
        """What every admin page's ``<title>`` ends with."""
        return f"{_site_name()} admin"

    @property
    def index_title(self) -> str:  # type: ignore[override]
        """The admin index's heading."""
        return f"Maintaining {_site_name()}"

    @method_decorator(never_cache)
    @login_not_required
    @override
    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """Django's login view; an attempt during a lock-out is answered by :func:`locked_out`."""
        if request.method == "POST":
            username = str(request.POST.get("username") or "")
            found = logins.refused(logins.Attempt.of(request, username))
            if found is not None:
                return locked_out(request, found)
        return super().login(request, extra_context)

    @property
    def login_form(self) -> type[AuthenticationForm]:  # type: ignore[override]
        """The throttled form; with ``TM_ADMIN_OTP``, the one that asks for a token too."""
        if not settings.TM_ADMIN_OTP:
            return LoginForm
        if not _otp_form:
            _otp_form.append(otp_login_form())
        return _otp_form[0]

    @property
    def login_template(self) -> str | None:  # type: ignore[override]
        """django-otp's login page (with the token field) when the setting is on."""
        return "otp/admin111/login.html" if settings.TM_ADMIN_OTP else None

    @override
    def has_permission(self, request: HttpRequest) -> bool:
        """Staff, and with ``TM_ADMIN_OTP`` a session a device verified."""
        if not super().has_permission(request):
            return False
        if not settings.TM_ADMIN_OTP:
            return True
        verified = getattr(request.user, "is_verified", None)
        return bool(verified and verified())
