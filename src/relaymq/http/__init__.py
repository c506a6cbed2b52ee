"""HTTP for relaymq: the asyncio server other parts add routes to, a client, and the service."""
