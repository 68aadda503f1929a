struct Player {
    name: String,
}

#[golem::tool]
async fn greet(player: Player, times: u32) -> String {
    player.name.repeat(times as usize)
}

fn main() {}
