"""Run the demo server over stdio: ``python -m tmsite.demo.mcp_server``."""

from tmsite.demo.mcp_server.server import build_server


def main() -> None:
    """Serve until stdin closes."""
    build_server().run("stdio")


if __name__ == "__main__":
    main()
