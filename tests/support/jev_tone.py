"""A tiny custom Jev question ("tone": warm or cool) that the Jev tests train on, written as
a user would add one: data plus metadata, no code."""

WARM = [
    "a red sunset over the desert",
    "orange flames in the fireplace",
    "golden autumn leaves",
    "hot summer sand",
    "a glowing ember",
    "ripe peaches and apricots",
    "a crackling campfire",
    "sunflowers in July",
    "warm terracotta tiles",
    "a cup of hot cocoa",
]
COOL = [
    "an icy blue glacier",
    "a deep ocean at night",
    "fresh mint leaves",
    "snow on pine trees",
    "a cold mountain lake",
    "a silver moon",
    "frost on the window",
    "blue hydrangeas in the shade",
    "a winter morning fog",
    "the arctic sea",
]
