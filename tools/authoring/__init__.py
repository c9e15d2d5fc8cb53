"""Writing the series: nbtool (sources -> notebooks), colab (the badge, the setup cell, the GPU check notebook),
learner (the learner versions), build_site, train."""
