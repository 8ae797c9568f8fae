; jump: a jump engine, run from the NMI handler.
;
; After set-up the reset code idles; the whole game step runs inside NMI
; (game-loop-in-nmi). Each frame the handler calls the routine for the
; current state through a table of addresses (jump-engine), the RTS way:
; push the routine's address minus one, then RTS "returns" into it.
; Entering a state uses the other way, JMP through a pointer in RAM.
; The states only change the backdrop colour, so the screen shows which
; one is running: title (blue), play (cycling hues), over (red).

PPUCTRL   = $2000
PPUMASK   = $2001
PPUSTATUS = $2002
PPUSCROLL = $2005
PPUADDR   = $2006
PPUDATA   = $2007

STATE_TITLE = 0
STATE_PLAY  = 1
STATE_OVER  = 2

.segment "HEADER"
    .byte "NES", $1A
    .byte 1, 1              ; 16K PRG, 8K CHR (all zero: every tile is blank)
    .byte $00, $00          ; mapper 0 (NROM)
    .res 8, 0

.zeropage
state:  .res 1              ; the state the engine runs this frame
timer:  .res 1              ; frames left in the current state
colour: .res 1              ; backdrop colour, written to $3F00 each vblank
vector: .res 2              ; target of JMP (vector); not at $xxFF (6502 bug)

.code
reset:
    sei
    cld
    ldx #$FF
    txs
    inx                     ; X = 0
    stx PPUCTRL             ; no NMI yet
    stx PPUMASK             ; rendering off
    stx $4010               ; no DMC IRQ
    bit PPUSTATUS           ; clear a stale vblank flag
@vblank1:
    bit PPUSTATUS           ; the PPU needs two frames to warm up
    bpl @vblank1
    txa
@clear:
    sta $00,x               ; zero page to 0 meanwhile
    inx
    bne @clear
@vblank2:
    bit PPUSTATUS
    bpl @vblank2

    lda #STATE_TITLE
    jsr enter_state
    lda #%10000000          ; NMI at every vblank
    sta PPUCTRL
    lda #%00001010          ; show the background (blank tiles, backdrop colour)
    sta PPUMASK
idle:
    jmp idle                ; nothing else to do: the game lives in NMI

nmi:
    pha
    txa
    pha
    tya
    pha
    lda #$3F                ; vblank work first, while it lasts
    sta PPUADDR
    lda #$00
    sta PPUADDR
    lda colour
    sta PPUDATA
    lda #%10000000          ; PPUADDR moved the scroll: set it back
    sta PPUCTRL
    lda #0
    sta PPUSCROLL
    sta PPUSCROLL
    lda state               ; then one game step
    jsr run_state
    pla
    tay
    pla
    tax
    pla
irq:
    rti

; run_state: A = state. The routine's own RTS returns to run_state's caller.
run_state:
    asl a                   ; two bytes per table entry
    tax
    lda step_table+1,x      ; high byte first: RTS pulls the low byte first
    pha
    lda step_table,x
    pha
    rts                     ; "returns" to the address + 1: the routine

; enter_state: A = state. Sets `state`, then jumps to its entry routine.
enter_state:
    sta state
    asl a
    tax
    lda enter_table,x
    sta vector
    lda enter_table+1,x
    sta vector+1
    jmp (vector)            ; its RTS returns to enter_state's caller

enter_title:
    lda #$02                ; dark blue
    ldx #120                ; two seconds
    bne set_state           ; always
enter_play:
    lda #$11
    ldx #240
    bne set_state
enter_over:
    lda #$16                ; red
    ldx #90
set_state:
    sta colour
    stx timer
    rts

title_step:
    dec timer
    bne done
    lda #STATE_PLAY
    jmp enter_state         ; a tail call: its RTS ends this step

play_step:
    lda timer
    and #%00000111          ; every eighth frame, the next hue
    bne @count
    inc colour
    lda colour
    cmp #$1D                ; hues $11..$1C, then round again
    bcc @count
    lda #$11
    sta colour
@count:
    dec timer
    bne done
    lda #STATE_OVER
    jmp enter_state

over_step:
    dec timer
    bne done
    lda #STATE_TITLE
    jmp enter_state
done:
    rts

.rodata
step_table:                 ; for the RTS trick: each address minus one
    .word title_step-1, play_step-1, over_step-1
enter_table:                ; for JMP (vector): the addresses themselves
    .word enter_title, enter_play, enter_over

.segment "VECTORS"
    .word nmi, reset, irq
