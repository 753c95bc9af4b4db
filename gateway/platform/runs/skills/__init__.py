"""Skills runs start from: skill specs, the variants GET /agent lists, the skills a team's
agents offer."""
