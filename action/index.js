// The action's entry point as GitHub runs it (action.yml's runs.main); the logic is in
// main.js, which exports run() (and which local runners import directly).
import { run } from "./main.js";

run();
