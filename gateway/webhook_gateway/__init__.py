"""The webhook gateway: ingress, signatures, webhooks and provider connections, automations and
their triggers, the delivery log, the queues to the evaluator, the evaluator, replies to
providers and the webhook console. It imports nothing of the platform."""
