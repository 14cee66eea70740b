"""What a note is: parsing (frontmatter, headings, tags, links), the path rules, the
config, dates, filters. The lowest layer above the plumbing; no index, no writes."""
