"""Scene texts several test files share."""


def drop_scene(run: str, height: float = 0.52, name: str = "drop") -> str:
    """TOML of one grain (radius 0.5, material ``grain``: E = 1e5, restitution 0.5,
    friction 0.3) at ``z = height`` falling at 1 onto the floor wall ``z = 0`` of the same
    material, no gravity; ``run``: the lines of its ``[run]`` table."""
    return f"""
name = "{name}"
[run]
{run.strip()}
[materials.grain]
young = 1e5
restitution = 0.5
friction = 0.3
[[particles]]
kind = "explicit"
x = [[0.0, 0.0, {height}]]
radius = 0.5
material = "grain"
velocity = [0.0, 0.0, -1.0]
[contacts]
[[walls]]
normal = [0.0, 0.0, 1.0]
offset = 0.0
material = "grain"
"""
