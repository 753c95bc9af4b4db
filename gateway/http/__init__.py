"""The HTTP server layer: the uvicorn server as the gateway runs it, the protocol that enforces
the request-head limits before the app sees a request, the response writes it takes over, and
whose forwarded headers are believed. It knows the kernel only; the app it serves is handed in."""
