; pad: reading the controller, one bit at a time.
;
; The main loop waits for the NMI handler to count a frame (frame-wait),
; then reads controller 1 (pad-poll): a strobe on $4016 latches the eight
; buttons, and eight reads shift them out, A first. A and B step through
; a list of backdrop colours on each new press; holding Select shows black.

PPUCTRL   = $2000
PPUMASK   = $2001
PPUSTATUS = $2002
PPUSCROLL = $2005
PPUADDR   = $2006
PPUDATA   = $2007
JOY1      = $4016

BUTTON_A      = %10000000   ; the order the pad sends them in, A first
BUTTON_B      = %01000000
BUTTON_SELECT = %00100000   ; then Start, Up, Down, Left, Right

.segment "HEADER"
    .byte "NES", $1A
    .byte 1, 1              ; 16K PRG, 8K CHR (all zero: every tile is blank)
    .byte $00, $00          ; mapper 0 (NROM)
    .res 8, 0

.zeropage
frame:   .res 1             ; counted by NMI
buttons: .res 1             ; held now, one bit per button
pressed: .res 1             ; held now but not last frame
choice:  .res 1             ; index into `colours`
shown:   .res 1             ; the colour NMI writes to the backdrop

.code
reset:
    sei
    cld
    ldx #$FF
    txs
    inx
    stx PPUCTRL
    stx PPUMASK
    stx $4010
    bit PPUSTATUS
@vblank1:
    bit PPUSTATUS
    bpl @vblank1
    txa
@clear:
    sta $00,x
    inx
    bne @clear
@vblank2:
    bit PPUSTATUS
    bpl @vblank2

    lda #%10000000          ; NMI at every vblank
    sta PPUCTRL
    lda #%00001010          ; background on: blank tiles over the backdrop
    sta PPUMASK

main_loop:
    jsr wait_frame
    lda buttons             ; what was held last frame
    eor #$FF
    pha
    jsr read_pad
    pla
    and buttons             ; held now and not before: new presses
    sta pressed
    and #BUTTON_A
    beq @not_a
    inc choice              ; A: next colour
@not_a:
    lda pressed
    and #BUTTON_B
    beq @not_b
    dec choice              ; B: previous colour
@not_b:
    lda choice
    and #15                 ; sixteen colours, round and round
    sta choice
    tax
    ldy colours,x
    lda buttons
    and #BUTTON_SELECT
    beq @show
    ldy #$0F                ; black while Select is held
@show:
    sty shown
    jmp main_loop

; wait_frame: returns once NMI has counted the next frame.
wait_frame:
    lda frame
@wait:
    cmp frame
    beq @wait
    rts

; read_pad: the eight buttons of controller 1 into `buttons`.
read_pad:
    lda #1                  ; strobe high: the pad latches its buttons
    sta JOY1
    lda #0                  ; strobe low: it starts shifting them out
    sta JOY1
    ldx #8
@bit:
    lda JOY1                ; bit 0 is the next button
    lsr a                   ; into carry
    rol buttons             ; and into `buttons` from the right
    dex
    bne @bit
    rts

nmi:
    pha
    lda #$3F
    sta PPUADDR
    lda #$00
    sta PPUADDR
    lda shown
    sta PPUDATA
    lda #%10000000          ; PPUADDR moved the scroll: set it back
    sta PPUCTRL
    lda #0
    sta PPUSCROLL
    sta PPUSCROLL
    inc frame
    pla
irq:
    rti

.rodata
colours:
    .byte $0F, $01, $11, $21, $02, $12, $22, $06
    .byte $16, $26, $09, $19, $29, $0A, $1A, $2A

.segment "VECTORS"
    .word nmi, reset, irq
