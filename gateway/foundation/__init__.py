"""What both products stand on: the store and attachment storage, the Redis and in-process
backends, accounts and API keys, the API toolkit and OpenAPI, metrics, events out (the event
log, outbound delivery, subscriptions, `gateway listen`) and `Services`, the resources one
process owns and hands to every handler. It imports neither product."""
