"""Writing the series: nbtool (sources -> notebooks), learner (the learner versions), build_site, train."""
