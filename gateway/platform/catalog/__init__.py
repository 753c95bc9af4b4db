"""What runs may choose from: models and cloud environments (from configuration), and the egress
ranges of service-hosted agents."""
