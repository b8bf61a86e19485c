"""HTML report of a campaign: the figures a researcher looks at first."""
