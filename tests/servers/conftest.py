"""Every child a servers test starts is gone when it ends; warm clients are closed."""

from tests.mcpmount.conftest import no_process_left_behind  # noqa: F401
