"""A synchronous client for reading other MCP servers (stdio and Streamable HTTP).

See :mod:`tmsite.mcpclient.client` for the contract; errors live in
:mod:`tmsite.mcpclient.errors`.
"""

from tmsite.mcpclient.client import (
    Client,
    Completion,
    Handshake,
    ProbeResult,
    ResourceContent,
    ToolResult,
    probe,
)
from tmsite.mcpclient.errors import (
    Gated,
    McpClientError,
    PeerError,
    ProtocolError,
    Refused,
    Timeout,
    TooDeep,
    TooLarge,
    Unreachable,
)
from tmsite.mcpclient.http import Hangup
from tmsite.mcpclient.limits import Limits
from tmsite.mcpclient.stdio import DEFAULT_ENV_ALLOW

__all__ = [
    "DEFAULT_ENV_ALLOW",
    "Client",
    "Completion",
    "Gated",
    "Handshake",
    "Hangup",
    "Limits",
    "McpClientError",
    "PeerError",
    "ProbeResult",
    "ProtocolError",
    "Refused",
    "ResourceContent",
    "Timeout",
    "TooDeep",
    "TooLarge",
    "ToolResult",
    "Unreachable",
    "probe",
]
